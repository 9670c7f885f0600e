-- Sliding-window counter, as a user writes it for one limit: the previous aligned window's count, weighted by
-- its overlap with the last `window`, plus the current window's, at most `max` (Redis TIME). A string
-- "<window's index>:<its count>:<the previous window's count>".
--
--   KEYS[1]  the limit's key
--   ARGV[1]  window, µs      ARGV[2]  max
--
-- Returns 1 (admitted) or 0.
local key, window, max = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local index = math.floor(now / window)
local w, c, p = string.match(redis.call('GET', key) or '', '^(%d+):(%d+):(%d+)$')
w = tonumber(w)
local current, previous = 0, 0
if w == index then
  current, previous = tonumber(c), tonumber(p)
elseif w == index - 1 then
  previous = tonumber(c)
end
-- Scaled by `window`, to stay in integers.
local elapsed = now - index * window
if (current + 1) * window + previous * (window - elapsed) > max * window then
  return 0
end
redis.call('SET', key, string.format('%d:%d:%d', index, current + 1, previous), 'PX',
  math.ceil((2 * window - elapsed) / 1000))
return 1
