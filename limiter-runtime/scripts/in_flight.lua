-- In flight, for calls of this one limit (one call, or calls on one key coalesced into one script call): at
-- most `max` permits of the key held at once, one per call whatever its cost. A permit expires `window` (its time to live) after it
-- was taken or last renewed (renew.lua), unless it is given back first (ZREM): the permits of a node that
-- dies come back. It answers only what the client cannot know: the client replays the calls on its twin of
-- the algorithm (src/algorithm/in_flight.rs). Calls of several limits go through limiter.lua, on the same
-- state.
--
--   KEYS[1]  the limit's key: a sorted set, one member per permit held, named by its call's nonce and scored
--            by when it expires (us)
--   ARGV[1]  a permit's time to live, us; tests pass "<ttl us> <now us> <minimum TTL ms>"
--   ARGV[2]  max
--   then each call's nonce (16 hex digits), in turn
--
-- Returns now (us) when no permit was held before the first call; else {now us, the permits held}.
--
-- By hand (one call, at most 2 at once, permits living 30 s): redis-cli --eval <(cat parts/now.lua in_flight.lua) rate_limit:demo , 30000000 2 00000000000000a1

local key, max = KEYS[1], tonumber(ARGV[2])

-- The permits that expired are no longer held.
local first = redis.call('ZCARD', key)
if first > 0 then first = first - redis.call('ZREMRANGEBYSCORE', key, '-inf', now) end
local held = first
for c = 3, #ARGV do
  if held < max then
    redis.call('ZADD', key, now + window, ARGV[c])
    held = held + 1
  end
end
if held > first then
  -- The key lives as long as its latest permit.
  local ms = math.ceil(window / 1000)
  if ms < min_ttl then ms = min_ttl end
  redis.call('PEXPIRE', key, ms)
end
if first > 0 then return {now, first} end
return now
