-- Decides calls of one limit (one call, or calls on one key coalesced into one script call), for one
-- algorithm: assembled at build time (see build.rs) for each, from its file of algorithms/ (what each section
-- reads and leaves: algorithms/README.md). It does what only Redis can (read the key's state, decide whether
-- each call fits, write the state) and answers the state before the first call, from which the client's twin
-- of the algorithm (src/algorithm/) replays the calls for their outcomes.
--
--   KEYS[1]  the limit's key
--   ARGV[1]  window us (in flight: a permit's time to live); tests pass "<window us> <now us> <minimum TTL ms>"
--   ARGV[2]  max; "<max>/<kept>" for calls that must leave `kept` units free for the priorities above their
--            own (src/priority.rs)
--   ARGV[3]  depth: the token bucket's burst, the leaky bucket's max wait (us), a calendar's ends
--            "<us>:<us>:<us>" (where the previous, the current and the next periods end); else 0
--   then the calls: none for one call of cost 1 that names nothing; its nonce (16 hex digits) alone for one
--   call of cost 1 that does (the sliding log's member, a permit); else each call's cost and nonce ("" when
--   it names nothing), in turn
--
-- Returns now (us) when the key held nothing before the first call and every call fitted; else {now us, the
-- state before the first call (see its algorithm's `first` and `second`; `first` is -1 when the key held
-- another algorithm's state, dropped: the key started afresh), then, for each call the sliding log refused,
-- the score of the member whose leaving would admit it ("" when its cost is above max) and the newest
-- member's}.
--
-- By hand (one call on a token bucket of 5 per 10 s, as assembled):
--   redis-cli --eval limiter-runtime/scripts/assembled/one_limit/token_bucket.lua rate_limit:demo , 10000000 5 5

--> part now
local key, depth, max_kept = KEYS[1], ARGV[3], ARGV[2]
--> part max
--> read
local notes
local last, c = #ARGV, 4
if last < 4 then last = 4 end
while c <= last do
  local cost, nonce = 1, ARGV[c]
  if #ARGV > 4 then
    cost, nonce = tonumber(ARGV[c]), ARGV[c + 1]
    c = c + 1
  end
  c = c + 1
  --> fits
  if fits then
    --> take
  else
    --> refused
  end
end
--> write
if first == 0 and not second and not notes and not afresh then return now end
-- A key the read found another algorithm's state in, and dropped, answers its state as -1: empty, told.
if afresh then first = -1 end
local reply = {now, first}
if second then reply[3] = second end
if notes then
  for i = 1, #notes do reply[#reply + 1] = notes[i] end
end
return reply
