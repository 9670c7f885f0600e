-- Fixed window, as a user writes it for one limit: at most `max` calls per aligned window of `window`
-- (Redis TIME). A hash: w = the window's index, n = the calls it admitted; it expires when its window ends.
--
--   KEYS[1]  the limit's key
--   ARGV[1]  window, µs      ARGV[2]  max
--
-- Returns 1 (admitted) or 0.
local key, window, max = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local index = math.floor(now / window)
local state = redis.call('HMGET', key, 'w', 'n')
if tonumber(state[1]) ~= index then
  redis.call('HSET', key, 'w', index, 'n', 1)
  redis.call('PEXPIRE', key, math.ceil(((index + 1) * window - now) / 1000))
  return 1
end
if tonumber(state[2]) < max then
  redis.call('HINCRBY', key, 'n', 1)
  return 1
end
return 0
