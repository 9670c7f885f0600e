-- Sliding-window log, for calls of this one limit (one call, or calls on one key coalesced into one script
-- call): at most `max` units in any interval of length `window`. It does what the algorithm needs and answers
-- only what the client cannot know: the client replays the calls on its twin of the algorithm
-- (src/algorithm/sliding_log.rs) for their remaining, retry_after and reset_after. Calls of several limits,
-- and charges given back, go through limiter.lua, on the same state.
--
--   KEYS[1]  the limit's key: a sorted set, one member per admitted unit, "<nonce>:<i>", scored by its
--            admission time (us)
--   ARGV[1]  window us; tests pass "<window us> <now us> <minimum TTL ms>" (Redis expires keys on its own
--            clock, not the test's)
--   ARGV[2]  max
--   then the calls: one call of cost 1 is its member alone ("<nonce>:1", the common call, as short as a
--   hand-written script's); else, for each call in turn, its cost and its nonce followed by ':' (16 hex digits
--   naming its members)
--
-- Returns now (us) when the window held nothing before the first call and every call was admitted; else {now
-- us, the count in the window before the first call, then for each call refused: the score of the member whose
-- leaving would admit it ("" when its cost is above max) and the newest member's score}.
--
-- By hand (one call on a log of 5 per 10 s): redis-cli --eval sliding_log.lua rate_limit:demo , 10000000 5 00:1

local window, now, min_ttl = tonumber(ARGV[1]), nil, 0
if window then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
else
  window, now, min_ttl = string.match(ARGV[1], '^(%d+) (%d+) (%d+)$')
  window, now, min_ttl = tonumber(window), tonumber(now), tonumber(min_ttl)
end
local key, max = KEYS[1], tonumber(ARGV[2])

-- An admission at time s counts while s > now - window.
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local first = redis.call('ZCARD', key)
local count, reply = first, nil
for c = 3, #ARGV, 2 do
  -- A call of cost 1 alone is its one member; else each call is its cost and its nonce.
  local cost, nonce = 1, nil
  if #ARGV > 3 then cost, nonce = tonumber(ARGV[c]), ARGV[c + 1] end
  if count + cost <= max then
    if nonce then
      for unit = 1, cost do
        redis.call('ZADD', key, now, nonce .. unit)
      end
    else
      redis.call('ZADD', key, now, ARGV[c])
    end
    count = count + cost
  else
    -- Admitted once the (count + cost - max)-th oldest member has left the window.
    local blocking = ''
    if cost <= max then
      local index = count + cost - max - 1
      blocking = redis.call('ZRANGE', key, index, index, 'WITHSCORES')[2]
    end
    reply = reply or {now, first}
    reply[#reply + 1] = blocking
    reply[#reply + 1] = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2] or ''
  end
end
if count > first then
  -- Every member leaves the window at most `window` from now: so does the key.
  local ttl = math.ceil(window / 1000)
  if ttl < min_ttl then ttl = min_ttl end
  redis.call('PEXPIRE', key, ttl)
end
if reply then return reply end
if first == 0 then return now end
return {now, first}
