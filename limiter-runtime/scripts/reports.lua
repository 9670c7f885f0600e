-- The live instances' reports of what they have seen (the operators' views), each stored with its heartbeat
-- (instances.lua), read in one call.
--
--   KEYS[1]  the group's sorted set of live instances (see instances.lua)
--   ARGV[1]  where an instance's report is: this, then its id (in KEYS[1]'s Cluster slot)
--
-- Returns {now (ms), then for each live instance's report: its age (ms) and the report}.
--
-- By hand: redis-cli --eval reports.lua limiter:instances:default , 'limiter:report:{limiter:instances:default}:'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now / 1000)
local reply = {now_ms}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')) do
  local report = redis.call('GET', ARGV[1] .. id)
  if report then
    local at, text = string.match(report, '^(%d+) (.*)$')
    if at then
      reply[#reply + 1] = now_ms - tonumber(at)
      reply[#reply + 1] = text
    end
  end
end
return reply
