#!lua flags=no-writes
-- Reads one limit's key without charging it or writing anything (the operators' `inspect`): the state each
-- algorithm's script of one limit would find before a call, in that script's reply, so that the client's twin
-- reads it as it reads a decision's. Assembled at build time (see build.rs) from each algorithm's `peek`.
--
--   KEYS[1]  the limit's key
--   ARGV[1]  window us (in flight: a permit's time to live); tests pass "<window us> <now us> <minimum TTL ms>"
--   ARGV[2]  max
--   ARGV[3]  the algorithm's code (as groups.lua numbers them)
--
-- Returns now (us) when the key holds nothing; else {now, then as the algorithm's script answers: the
-- window's count (fixed); the count and the end of the period it is of (calendar: the client knows whether
-- that is now's); the current and previous counts (sliding window); the queue's reach past now and its run
-- "<s>:<g>" (buckets); the permits held (in flight); the units in the window, when the admission was made
-- whose leaving lets one more unit in ("" while one fits) and when the newest was (sliding log)}.
--
-- By hand (as assembled):
--   redis-cli --eval limiter-runtime/scripts/assembled/inspect.lua rate_limit:demo , 10000000 5 1

--> part now
local key, max, code = KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3])
--> each peek: peek
return now
