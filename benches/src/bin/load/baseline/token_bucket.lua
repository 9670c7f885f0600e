-- Token bucket, as GCRA: a bucket of `burst` tokens, refilled at `max` tokens per `window`; a call takes
-- `cost` tokens or is rejected. Never more than burst + max × t / window admitted over any interval t.
--
-- One string per limit, "<t>:<f>": the theoretical arrival time (when the bucket is full again), t in whole
-- µs plus f in 1/max µs, so that any rate (10 s / 3, say) stays exact. Read with GET, written with one
-- SET .. PX (value and expiry in one command). A key of another type (a hash, left by a version that kept
-- the state in one) reads as a full bucket and is replaced.
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
-- By hand: redis-cli --eval token_bucket.lua rate_limit:demo , 10000000 5 1 5 0
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

local burst = tonumber(ARGV[4])
local tat, frac
local state = redis.pcall('GET', key)
if type(state) == 'string' then
  local t, f = string.match(state, '^(%d+):(%d+)$')
  tat, frac = tonumber(t), tonumber(f)
end
if not tat or tat < now then tat, frac = now, 0 end

-- The part of the bucket in use, in µs × max: one token weighs `window`.
local used = (tat - now) * max + frac
local capacity = burst * window
local need = cost * window
if cost <= burst and used + need <= capacity then
  used = used + need
  local ahead = math.floor(used / max)
  local reset_after = ceil_div(used, max)
  local ttl = math.max(math.ceil(reset_after / 1000), min_ttl)
  redis.call('SET', key, string.format('%d:%d', now + ahead, used - ahead * max), 'PX', ttl)
  return {1, math.floor((capacity - used) / window), 0, reset_after, 0, now}
end

local retry_after = window
if cost <= burst then retry_after = ceil_div(used + need - capacity, max) end
return {0, math.max(math.floor((capacity - used) / window), 0), retry_after, ceil_div(used, max), 0, now}
