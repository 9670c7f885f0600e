-- Sets or clears one run-time override of a limit, counts the change in the hash's version, and announces it
-- with that version to every runtime (PUBLISH), atomically. Returns the version.
--
--   KEYS[1]  the hash of overrides: field = the limit (and key) overridden, value = "max=<n>;window=<µs>";
--            and the field "version", the number of changes made so far
--   ARGV[1]  "set" or "clear"
--   ARGV[2]  the field
--   ARGV[3]  the value (for "set")
--   ARGV[4]  the channel runtimes listen on
--
-- The announcement is "<version>\n<set|clear>\n<value>\n<field>": the field last, as it may hold any text.
--
-- By hand: redis-cli --eval overrides.lua limiter:overrides , set "p:15:rate_limit:emp:" "max=10" limiter:overrides
if ARGV[1] == 'set' then
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
else
  redis.call('HDEL', KEYS[1], ARGV[2])
end
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('PUBLISH', ARGV[4], version .. '\n' .. ARGV[1] .. '\n' .. ARGV[3] .. '\n' .. ARGV[2])
return version
