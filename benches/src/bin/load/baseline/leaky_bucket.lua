-- Leaky bucket, for shaping: calls leave at a steady `max` per `window`, one slot every window / max. A call
-- takes the next free slot (`cost` slots long) if that slot starts within `max_wait` of now, and is told how
-- long to wait for it (`delay`); otherwise it is rejected. Admitted slots never start closer than
-- window / max apart.
--
-- One string per limit, "<t>:<f>": when the next slot is free, t in whole µs plus f in 1/max µs. Read with
-- GET, written with one SET .. PX. A key of another type (a hash, left by a version that kept the state in
-- one) reads as an empty queue and is replaced.
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
-- By hand: redis-cli --eval leaky_bucket.lua rate_limit:demo , 10000000 5 1 5 0
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

local function ceil_div(a, b)
  return math.floor((a + b - 1) / b)
end

local max_wait = tonumber(ARGV[5])
local tat, frac
local state = redis.pcall('GET', key)
if type(state) == 'string' then
  local t, f = string.match(state, '^(%d+):(%d+)$')
  tat, frac = tonumber(t), tonumber(f)
end
if not tat or tat < now then tat, frac = now, 0 end

-- How far ahead the next free slot starts, in µs × max: one slot weighs `window`.
local queued = (tat - now) * max + frac
local limit = max_wait * max
if cost <= max and queued <= limit then
  local after = queued + cost * window
  local ahead = math.floor(after / max)
  local reset_after = ceil_div(after, max)
  local ttl = math.max(math.ceil(reset_after / 1000), min_ttl)
  redis.call('SET', key, string.format('%d:%d', now + ahead, after - ahead * max), 'PX', ttl)
  local remaining = 0
  if after <= limit then remaining = math.min(max, math.floor((limit - after) / window) + 1) end
  return {1, remaining, 0, reset_after, ceil_div(queued, max), now}
end

local retry_after = window
if cost <= max then retry_after = ceil_div(queued - limit, max) end
return {0, 0, retry_after, ceil_div(queued, max), 0, now}
