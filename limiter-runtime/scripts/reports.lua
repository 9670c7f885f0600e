-- The live instances of a group, for reading their reports (instances.lua stores each with its heartbeat):
-- the client then reads the reports with one MGET, in KEYS[1]'s Cluster slot. A script touches only the keys
-- it is given, so the reports, whose names it learns here, are not read here.
--
--   KEYS[1]  the group's sorted set of live instances (see instances.lua)
--
-- Returns {now (ms), then each live instance's id}.
--
-- By hand: redis-cli --eval reports.lua limiter:instances:default
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local reply = {math.floor(now / 1000)}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')) do
  reply[#reply + 1] = id
end
return reply
