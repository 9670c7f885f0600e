-- Token bucket, as a user writes it for one limit: GCRA in whole µs (Redis TIME), one token every `interval`,
-- at most `burst` at once. A string: the theoretical arrival time, when the bucket is full again.
--
--   KEYS[1]  the limit's key
--   ARGV[1]  interval, µs (window / max)      ARGV[2]  burst
--
-- Returns 1 (admitted) or 0.
local key, interval, burst = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local tat = tonumber(redis.call('GET', key)) or now
if tat < now then tat = now end
local after = tat + interval
if after - now <= burst * interval then
  redis.call('SET', key, string.format('%d', after), 'PX', math.ceil((after - now) / 1000))
  return 1
end
return 0
