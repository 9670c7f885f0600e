-- Leaky bucket, for shaping, for calls of this one limit (one call, or calls on one key coalesced into one
-- script call): calls leave at a steady `max` per `window`; a call takes the next free slot if it starts
-- within `max wait`. It answers only what the client cannot know: the client replays the calls on its twin
-- of the algorithm (src/algorithm/leaky_bucket.rs), which says how long each waits for its slot. Calls of
-- several limits, and charges given back, go through limiter.lua, on the same state.
--
--   KEYS[1]  the limit's key: a string "<t>:<f>:<s>:<g>", the queue of charges (see token_bucket.lua)
--   ARGV[1]  window us; tests pass "<window us> <now us> <minimum TTL ms>"
--   ARGV[2]  max
--   ARGV[3]  max wait us
--   then each call's cost, in turn; none for one call of cost 1 (the common call)
--
-- Returns now (us) when the queue was empty before the first call; else {now us, how far the queue reached
-- past now (us x max), its "<s>:<g>"}.
--
-- By hand (one call, 5 per 10 s, waiting up to 2 s): redis-cli --eval <(cat parts/now.lua parts/queue_read.lua leaky_bucket.lua parts/queue_write.lua) rate_limit:demo , 10000000 5 2000000

-- One slot weighs `window`; a call is admitted while the queue before it is within the wait.
local limit, queued = tonumber(ARGV[3]) * max, first
-- No cost at all is one call of cost 1.
for c = 4, #ARGV > 3 and #ARGV or 4 do
  local cost = 1
  if ARGV[c] then cost = tonumber(ARGV[c]) end
  if cost <= max and queued <= limit then queued = queued + cost * window end
end
