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
-- By hand (one call, 5 per 10 s, waiting up to 2 s): redis-cli --eval leaky_bucket.lua rate_limit:demo , 10000000 5 2000000

local window, now, min_ttl = tonumber(ARGV[1]), nil, 0
if window then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
else
  window, now, min_ttl = string.match(ARGV[1], '^(%d+) (%d+) (%d+)$')
  window, now, min_ttl = tonumber(window), tonumber(now), tonumber(min_ttl)
end
local key, max = KEYS[1], tonumber(ARGV[2])

local state = redis.pcall('GET', key)
local first, t, f, run, gaps = 0, nil, nil, nil, ''
if type(state) == 'string' then
  t, f, run, gaps = string.match(state, '^(%d+):(%d+):(%d+:%d+)(.*)$')
  t = tonumber(t)
  if run and t >= now then first = (t - now) * max + tonumber(f) end
end
-- One slot weighs `window`; a call is admitted while the queue before it is within the wait.
local limit, queued = tonumber(ARGV[3]) * max, first
-- No cost at all is one call of cost 1.
for c = 4, #ARGV > 3 and #ARGV or 4 do
  local cost = 1
  if ARGV[c] then cost = tonumber(ARGV[c]) end
  if cost <= max and queued <= limit then queued = queued + cost * window end
end
if queued > first then
  -- Whole us past now, and a TTL of the queue's length, ms up (exact: below 2^53, a float quotient never
  -- rounds across an integer).
  local rest = queued % max
  local ahead = (queued - rest) / max
  local ttl = ahead
  if rest > 0 then ttl = ttl + 1 end
  ttl = math.ceil(ttl / 1000)
  if ttl < min_ttl then ttl = min_ttl end
  local queue
  if first == 0 then
    -- A queue that was empty starts a new run of charges, with nothing given back yet.
    queue = string.format('%d:%d:%d:0', now + ahead, rest, now)
  else
    queue = string.format('%d:%d:', now + ahead, rest) .. run .. gaps
  end
  redis.call('SET', key, queue, 'PX', ttl)
end
if first > 0 then return {now, first, run} end
return now
