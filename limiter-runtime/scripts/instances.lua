-- Heartbeat of one runtime: keeps it in its group's set of live instances and counts them. A runtime in
-- on_error = local mode divides each limit by this count while Redis is down.
--
--   KEYS[1]  the group's sorted set: member = instance id, score = when its heartbeat expires (µs, Redis time)
--   ARGV[1]  this instance's id
--   ARGV[2]  heartbeat lifetime, µs
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
return redis.call('ZCARD', key)
