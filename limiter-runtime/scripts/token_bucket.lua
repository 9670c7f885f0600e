-- Token bucket as GCRA, for calls of this one limit (one call, or calls on one key coalesced into one script
-- call): a bucket of `burst` tokens refilled at `max` per `window`, never more than burst + max * t / window
-- admitted over any interval t. It answers only what the client cannot know: the client replays the calls
-- on its twin of the algorithm (src/algorithm/token_bucket.rs). Calls of several limits, and charges given
-- back, go through limiter.lua, on the same state.
--
--   KEYS[1]  the limit's key: a string "<t>:<f>:<s>:<g>", the queue of charges: when they have all left (t in
--            whole us, f in 1/max us), since when it has held charges without a pause (s), and what has been
--            given back out of order since then (g, in us x max), then the records of those give-backs; see
--            limiter.lua
--   ARGV[1]  window us; tests pass "<window us> <now us> <minimum TTL ms>"
--   ARGV[2]  max
--   ARGV[3]  burst
--   then each call's cost, in turn; none for one call of cost 1 (the common call)
--
-- Returns now (us) when the queue was empty before the first call; else {now us, how far the queue reached
-- past now (us x max), its "<s>:<g>"}.
--
-- By hand (one call on a bucket of 5 per 10 s): redis-cli --eval <(cat parts/now.lua parts/queue_read.lua token_bucket.lua parts/queue_write.lua) rate_limit:demo , 10000000 5 5

local burst = tonumber(ARGV[3])
-- One token weighs `window`.
local capacity, queued = burst * window, first
-- No cost at all is one call of cost 1.
for c = 4, #ARGV > 3 and #ARGV or 4 do
  local need = window
  if ARGV[c] then need = tonumber(ARGV[c]) * window end
  if need <= capacity and queued + need <= capacity then queued = queued + need end
end
