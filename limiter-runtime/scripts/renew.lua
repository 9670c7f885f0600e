-- Renews the permits a node holds on one in-flight key (see algorithms/in_flight.lua): each one still held
-- expires `ttl` from now again. A permit that expired (its node too late to renew it) or was given back is not taken again.
--
--   KEYS[1]  the limit's key
--   ARGV[1]  a permit's time to live, us; tests pass "<ttl us> <now us> <minimum TTL ms>"
--   then the nonces of the permits to renew
--
-- Returns the permits renewed.

--> part now
local key = KEYS[1]

redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local args = {}
for c = 2, #ARGV do
  args[#args + 1] = now + window
  args[#args + 1] = ARGV[c]
end
if #args == 0 then return 0 end
local renewed = redis.call('ZADD', key, 'XX', 'CH', unpack(args))
if redis.call('EXISTS', key) == 1 then
  local ms = math.ceil(window / 1000)
  if ms < min_ttl then ms = min_ttl end
  redis.call('PEXPIRE', key, ms)
end
return renewed
