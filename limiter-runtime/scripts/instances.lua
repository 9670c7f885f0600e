-- Heartbeat of one runtime: keeps it in its group's set of live instances and counts them (a runtime in
-- on_error = local mode divides each limit by this count while Redis is down); and, with it, stores the
-- runtime's report of what it has seen, for the operators' views (see reports.lua), as long-lived.
--
--   KEYS[1]  the group's sorted set: member = instance id, score = when its heartbeat expires (µs, Redis time)
--   KEYS[2]  this instance's report (in KEYS[1]'s Cluster slot); only with ARGV[3]
--   ARGV[1]  this instance's id
--   ARGV[2]  heartbeat lifetime, µs
--   ARGV[3]  the report, if any: stored as "<now ms> <report>"
--
-- Returns the number of live instances (this one included).
--
-- By hand: redis-cli --eval instances.lua limiter:instances:default , node-1 3000000
local key = KEYS[1]
local lifetime = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZADD', key, now + lifetime, ARGV[1])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
redis.call('PEXPIRE', key, math.ceil(lifetime / 1000))
if ARGV[3] then
  redis.call('SET', KEYS[2], math.floor(now / 1000) .. ' ' .. ARGV[3], 'PX', math.ceil(lifetime / 1000))
end
return redis.call('ZCARD', key)
