-- Fixed window: at most `max` units per aligned window [k·window, (k+1)·window).
--
-- One hash per limit: w = the window's index, n = units admitted in it. The expiry is set once, when the
-- window opens, to the window's end: never pushed forward by later calls. Up to 2 × max can pass across a
-- boundary (max at the end of one window, max at the start of the next).
--
--   KEYS[1]  the limit's key
--   ARGV[1]  window, µs            ARGV[2]  max per window      ARGV[3]  cost of this call
--   ARGV[4]  burst (token bucket)  ARGV[5]  max wait, µs (leaky bucket)
--   ARGV[6]  now, µs — tests only; absent means Redis TIME
--   ARGV[7]  minimum TTL, ms — tests only (with ARGV[6]: Redis expires keys on its own clock, not the test's)
--
-- Returns {allowed (1 or 0), remaining, retry_after µs, reset_after µs, delay µs, now µs}.
-- Integers throughout (exact while max × window stays below 2^53); no decision depends on the key's TTL.
--
-- By hand: redis-cli --eval fixed_window.lua rate_limit:demo , 10000000 5 1 5 0
local key = KEYS[1]
local window = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now = tonumber(ARGV[6])
local min_ttl = tonumber(ARGV[7]) or 0
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local index = math.floor(now / window)
local reset_after = (index + 1) * window - now
local state = redis.call('HMGET', key, 'w', 'n')
local count = 0
if tonumber(state[1]) == index then count = tonumber(state[2]) end

if count + cost <= max then
  if tonumber(state[1]) == index then
    redis.call('HINCRBY', key, 'n', cost)
  else
    redis.call('HSET', key, 'w', index, 'n', cost)
    redis.call('PEXPIRE', key, math.max(math.ceil(reset_after / 1000), min_ttl))
  end
  return {1, max - count - cost, 0, reset_after, 0, now}
end

-- A cost above the limit can never be admitted: report the whole window.
local retry_after = reset_after
if cost > max then retry_after = window end
return {0, math.max(max - count, 0), retry_after, reset_after, 0, now}
