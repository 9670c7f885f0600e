-- Takes a lease on one limit (a token bucket or a fixed window): as many of the units wanted as the limit has
-- room for, if that is at least the call's cost, else none; giving back first what is left of an earlier
-- lease of this node. Assembled at build time (see build.rs) from the algorithms' files.
--
--   KEYS[1]  the limit's key
--   ARGV[1]  "" (now from Redis's TIME); tests pass "<now us> <minimum TTL ms>"
--   ARGV[2]  the algorithm's code (as groups.lua numbers them: 2 or 4), then window us, max and depth (as
--            one_limit.lua takes them), the call's cost, the units wanted (at least the cost); then, when an
--            earlier lease is given back, its units left, its units, when it was taken (us) and its mark (as
--            give_back.lua takes them)
--
-- Returns {now, units taken, then the state before taking them, as one_limit.lua answers it ("" for none)}.

--> part clock
local key, code, window, depth, max_kept = KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[5], ARGV[4]
--> part max
local cost, want = tonumber(ARGV[6]), tonumber(ARGV[7])
--> each room: part lease
return redis.error_reply('ERR lease: no lease on this algorithm')
