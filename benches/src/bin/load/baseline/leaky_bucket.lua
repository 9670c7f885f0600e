-- Leaky bucket, as a user writes it for one limit: calls leave one every `interval` (GCRA in whole µs, Redis
-- TIME); a call is admitted if its slot starts within `max wait` (0: only when the bucket is empty). A string:
-- when the last admitted call's slot ends.
--
--   KEYS[1]  the limit's key
--   ARGV[1]  interval, µs (window / max)      ARGV[2]  max wait, µs
--
-- Returns 1 (admitted) or 0: the benchmark rejects (max wait 0); a caller that waits for its slot would return
-- tat - now as well.
local key, interval, max_wait = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local tat = tonumber(redis.call('GET', key)) or now
if tat < now then tat = now end
if tat - now > max_wait then
  return 0
end
local after = tat + interval
redis.call('SET', key, string.format('%d', after), 'PX', math.ceil((after - now) / 1000))
return 1
