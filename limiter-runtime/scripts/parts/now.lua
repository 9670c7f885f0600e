-- The head of the scripts of one limit's calls (one_limit.lua, renew.lua): the window (a permit's time to
-- live, for calls in flight) from ARGV[1], and now from Redis's clock (TIME); a test passes "<window us>
-- <now us> <minimum TTL ms>" instead, as Redis expires keys on its own clock, not the test's.
local window, now, min_ttl = tonumber(ARGV[1]), nil, 0
if window then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
else
  window, now, min_ttl = string.match(ARGV[1], '^(%d+) (%d+) (%d+)$')
  window, now, min_ttl = tonumber(window), tonumber(now), tonumber(min_ttl)
end
