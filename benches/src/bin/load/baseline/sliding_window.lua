-- Sliding window counter: the previous aligned window's count, weighted by the part of it the sliding window
-- still covers, plus the current window's count. O(1) memory: one string per limit, "<w>:<c>:<p>" (w = the
-- current window's index, c = its count, p = the previous window's count), read with GET and written with
-- one SET .. PX. A key of another type (a hash, left by a version that kept the state in one) reads as
-- empty and is replaced.
--
-- An estimate: it assumes the previous window's calls were spread evenly, so it can admit more than `max` in
-- some interval of length `window` when they were not (at most 2 × max; never more than `max` per aligned
-- window, and never more than the estimate allows).
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
-- By hand: redis-cli --eval sliding_window.lua rate_limit:demo , 10000000 5 1 5 0
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
local elapsed = now - index * window
local stored, c, p
local state = redis.pcall('GET', key)
if type(state) == 'string' then
  local w
  w, c, p = string.match(state, '^(%d+):(%d+):(%d+)$')
  stored = tonumber(w)
end
local current, previous = 0, 0
if stored == index then
  current, previous = tonumber(c), tonumber(p)
elseif stored == index - 1 then
  previous = tonumber(c)
end

-- Weights are scaled by `window` to stay integers: a unit of the current window weighs `window`.
local used = previous * (window - elapsed) + current * window
local capacity = max * window
if used + cost * window <= capacity then
  current = current + cost
  -- The current window's count weighs until the next window ends.
  local reset_after = 2 * window - elapsed
  local ttl = math.max(math.ceil(reset_after / 1000), min_ttl)
  redis.call('SET', key, string.format('%d:%d:%d', index, current, previous), 'PX', ttl)
  return {1, math.floor((capacity - used - cost * window) / window), 0, reset_after, 0, now}
end

local retry_after = window
if cost <= max then
  local room = (max - cost - current) * window
  if room >= 0 then
    -- Later in this window, once the previous window weighs little enough.
    retry_after = window - elapsed - math.floor(room / previous)
  else
    -- In the next window, once this window (then the previous one) weighs little enough.
    retry_after = window - elapsed + window - math.floor((max - cost) * window / current)
  end
end
local reset_after = 0
if current > 0 then
  reset_after = 2 * window - elapsed
elseif previous > 0 then
  reset_after = window - elapsed
end
return {0, math.max(math.floor((capacity - used) / window), 0), retry_after, reset_after, 0, now}
