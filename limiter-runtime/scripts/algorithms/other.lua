-- What a key holds that an algorithm's read could not read, a value of another type (`wrong`: the error
-- Redis answered its first read, `WRONGTYPE`): the state of another algorithm (a window's or a calendar's
-- count, a hash of numbers; a sliding window's counts or a bucket's queue, a string of numbers; a log's
-- members or permits in flight, a sorted set, named by 16 hex digits or "#"), which the read drops (`DEL`):
-- the key starts afresh (`afresh`, which the client tells). Any other value (another application's, under
-- the limiter's keys; or a bucket's hash an older version left) is left as it is, `afresh` false: a hash's
-- or a sorted set's read raises `wrong` (the key's fault, which its limit's `on_error` decides); a string's
-- reads it as nothing, and writes over it, as ever.

--@read
local kind, theirs = redis.call('TYPE', key).ok, false
if kind == 'string' then
  local text = redis.call('GET', key)
  theirs = string.match(text, '^%d+:%d+:%d+')
elseif kind == 'hash' then
  local held = redis.call('HMGET', key, 'w', 'n')
  theirs = tonumber(held[1]) and tonumber(held[2])
elseif kind == 'zset' then
  local lowest = redis.call('ZRANGE', key, 0, 0)[1] or ''
  theirs = lowest == '#' or string.match(lowest, '^' .. string.rep('%x', 16))
end
if theirs then
  redis.call('DEL', key)
  afresh = true
end
