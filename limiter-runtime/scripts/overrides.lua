-- Sets or clears one run-time override of a limit and tells every runtime (PUBLISH), atomically.
--
--   KEYS[1]  the hash of overrides: field = the limit (and key) overridden, value = "max=<n>;window=<µs>"
--   ARGV[1]  "set" or "clear"
--   ARGV[2]  the field
--   ARGV[3]  the value (for "set")
--   ARGV[4]  the channel runtimes listen on
--
-- By hand: redis-cli --eval overrides.lua limiter:overrides , set "p:15:rate_limit:emp:" "max=10" limiter:overrides
if ARGV[1] == 'set' then
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
else
  redis.call('HDEL', KEYS[1], ARGV[2])
end
redis.call('PUBLISH', ARGV[4], ARGV[2])
return 1
