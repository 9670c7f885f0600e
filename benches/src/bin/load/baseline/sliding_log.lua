-- Sliding-window log: at most `max` admissions (weighted by cost) in any interval of length `window`.
--
-- One sorted set per limit: every admitted unit is a member scored by its admission time in µs.
-- Time comes from Redis (TIME) unless a test passes "now" in, so skewed clients share one exact window.
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
-- By hand: redis-cli --eval sliding_log.lua rate_limit:demo , 10000000 5 1 5 0
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

-- An admission at time s counts while s > now - window.
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)

if count + cost <= max then
  -- Members are "<now>:<position>": unique even for many calls in the same microsecond, because
  -- the members sharing one timestamp are all present until that timestamp leaves the window.
  for i = 1, cost do
    redis.call('ZADD', key, now, string.format('%d:%d', now, count + i))
  end
  -- Every member leaves the window at most `window` from now: so does the key.
  redis.call('PEXPIRE', key, math.max(math.ceil(window / 1000), min_ttl))
  return {1, max - count - cost, 0, window, 0, now}
end

local remaining = max - count
if remaining < 0 then remaining = 0 end
-- A cost above the limit can never be admitted: report the whole window.
local retry_after = window
if cost <= max then
  -- Admitted once the (count + cost - max)-th oldest member has left the window.
  local index = count + cost - max - 1
  local oldest = redis.call('ZRANGE', key, index, index, 'WITHSCORES')
  retry_after = tonumber(oldest[2]) + window - now
end
local reset_after = 0
local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
if newest[2] then reset_after = tonumber(newest[2]) + window - now end
return {0, remaining, retry_after, reset_after, 0, now}
