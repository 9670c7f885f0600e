-- Sliding-window log, as a user writes it for one limit: at most `max` calls in any interval of `window`.
-- A sorted set of admission times (µs, Redis TIME), one member per admitted call.
--
--   KEYS[1]  the limit's key
--   ARGV[1]  window, µs      ARGV[2]  max      ARGV[3]  a member unique to this call
--
-- Returns 1 (admitted) or 0.
local key, window, max = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) < max then
  redis.call('ZADD', key, now, ARGV[3])
  redis.call('PEXPIRE', key, math.ceil(window / 1000))
  return 1
end
return 0
