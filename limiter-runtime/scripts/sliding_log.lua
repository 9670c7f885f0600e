-- Sliding-window log, for calls of this one limit (one call, or calls on one key coalesced into one script
-- call): at most `max` units in any interval of length `window`. It does what the algorithm needs and answers
-- only what the client cannot know: the client replays the calls on its twin of the algorithm
-- (src/algorithm/sliding_log.rs) for their remaining, retry_after and reset_after. Calls of several limits,
-- and charges given back, go through limiter.lua, on the same state.
--
--   KEYS[1]  the limit's key: a sorted set, one member per admitted call, scored by its admission time (us):
--            "<nonce>:1" for a call of cost 1, "<nonce>*<cost>" for a heavier one (a cost is a weight, never a
--            number of entries); and "#", scored minus the units in the window, plus 2^52 while heavier calls
--            may be among them (a key an older version wrote has no "#": each of its members is one unit)
--   ARGV[1]  window us; tests pass "<window us> <now us> <minimum TTL ms>" (Redis expires keys on its own
--            clock, not the test's)
--   ARGV[2]  max
--   then the calls: one call of cost 1 is its member alone ("<nonce>:1", the common call, as short as a
--   hand-written script's); else, for each call in turn, its cost and its nonce (16 hex digits naming its
--   member)
--
-- Returns now (us) when the window held nothing before the first call and every call was admitted; else {now
-- us, the units in the window before the first call, then for each call refused: the score of the member whose
-- leaving would admit it ("" when its cost is above max) and the newest member's score}.
--
-- By hand (one call on a log of 5 per 10 s): redis-cli --eval <(cat parts/now.lua sliding_log.lua) rate_limit:demo , 10000000 5 00:1

local key, max, HEAVY = KEYS[1], tonumber(ARGV[2]), 4503599627370496

-- The units in the window, as "#" keeps them. An admission at time s counts while s > now - window: the
-- members that left take their units with them (each one's, read, while heavier calls may be among them).
local written = tonumber(redis.call('ZSCORE', key, '#'))
local first, heavy = 0, false
if written then
  first = -written
  if first >= HEAVY then first, heavy = first - HEAVY, true end
  if heavy then
    for _, member in ipairs(redis.call('ZRANGEBYSCORE', key, 0, now - window)) do
      first = first - (tonumber(string.match(member, '%*(%d+)$')) or 1)
    end
    redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
  else
    first = first - redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
  end
else
  first = redis.call('ZCARD', key)
  if first > 0 then
    redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
    first = redis.call('ZCARD', key)
  end
end
-- Whether a call here was heavier: "#" then keeps its mark for sure.
local count, reply, weighed = first, nil, false
for c = 3, #ARGV, 2 do
  -- A call of cost 1 alone is its one member; else each call is its cost and its nonce.
  local cost, member = 1, ARGV[c]
  if #ARGV > 3 then cost, member = tonumber(ARGV[c]), ARGV[c + 1] .. ':1' end
  if count + cost <= max then
    if cost > 0 then
      if cost > 1 then member, heavy, weighed = ARGV[c + 1] .. '*' .. cost, true, true end
      -- The member, and "#" with the units it adds: one command.
      count = count + cost
      written = -count
      if heavy then written = written - HEAVY end
      redis.call('ZADD', key, now, member, written, '#')
    end
  else
    -- Admitted once the oldest members holding (count + cost - max) units have left the window ("#", when
    -- there, is the lowest: past it).
    local blocking, skip = '', 0
    if written then skip = 1 end
    if cost <= max and not heavy then
      local index = count + cost - max - 1 + skip
      blocking = redis.call('ZRANGE', key, index, index, 'WITHSCORES')[2]
    elseif cost <= max then
      -- Heavier calls may be among them: their weights, from the oldest, 64 members at a time.
      local need, start, page = count + cost - max, skip, nil
      repeat
        page = redis.call('ZRANGE', key, start, start + 63, 'WITHSCORES')
        for m = 1, #page, 2 do
          need = need - (tonumber(string.match(page[m], '%*(%d+)$')) or 1)
          if need <= 0 then
            blocking = page[m + 1]
            break
          end
        end
        start = start + 64
      until need <= 0 or #page < 128
    end
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    reply = reply or {now, first}
    reply[#reply + 1] = blocking
    reply[#reply + 1] = (newest[1] ~= '#' and newest[2]) or ''
  end
end
-- "#" as the calls left it: heavier calls no longer marked once none is left (every member one unit again),
-- and gone with the last unit.
if heavy and not weighed and redis.call('ZCARD', key) - 1 == count then heavy = false end
local kept = -count
if heavy then kept = kept - HEAVY end
if count == 0 then
  if written then redis.call('ZREM', key, '#') end
elseif kept ~= written then
  redis.call('ZADD', key, kept, '#')
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
