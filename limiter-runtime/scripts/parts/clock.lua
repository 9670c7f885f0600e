-- The head of the scripts of several limits (groups.lua, give_back.lua, lease.lua, ban.lua): now from
-- Redis's clock (TIME), when ARGV[1] is ""; a test passes "<now us> <minimum TTL ms>" instead, as Redis
-- expires keys on its own clock, not the test's.
local now, min_ttl = nil, 0
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
else
  now, min_ttl = string.match(ARGV[1], '^(%d+) (%d+)$')
  now, min_ttl = tonumber(now), tonumber(min_ttl)
end
