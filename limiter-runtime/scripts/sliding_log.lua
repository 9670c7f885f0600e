-- Sliding-window log, for calls of this one limit (one call, or calls on one key coalesced into one script
-- call): at most `max` units in any interval of length `window`. It does what the algorithm needs and answers
-- only what the client cannot know: the client replays the calls on its twin of the algorithm
-- (src/algorithm/sliding_log.rs) for their remaining, retry_after and reset_after. Calls of several limits,
-- and charges given back, go through limiter.lua, on the same state.
--
--   KEYS[1]  the limit's key: a sorted set, one member per admitted call, scored by its admission time (us):
--            "<nonce>:1" for a call of cost 1, "<nonce>*<cost>" for a heavier one; and, while heavier calls
--            are in it, the member "#" scored minus their extra units (the sum of their costs less one each),
--            so that a call's cost is a weight, never a number of entries
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

-- An admission at time s counts while s > now - window. The extra units of the heavier calls leaving go with
-- them.
local stored = tonumber(redis.call('ZSCORE', key, '#'))
local extra = 0
if stored then
  extra = -stored
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', key, 0, now - window)) do
    local cost = string.match(member, '%*(%d+)$')
    if cost then extra = extra - cost + 1 end
  end
end
redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
-- While the script runs, "#" (when there) is the lowest member.
local skip = 0
if stored then skip = 1 end
local first = redis.call('ZCARD', key) - skip + extra
local count, held, reply = first, extra, nil
for c = 3, #ARGV, 2 do
  -- A call of cost 1 alone is its one member; else each call is its cost and its nonce.
  local cost, nonce = 1, nil
  if #ARGV > 3 then cost, nonce = tonumber(ARGV[c]), ARGV[c + 1] end
  if count + cost <= max then
    if not nonce then
      redis.call('ZADD', key, now, ARGV[c])
    elseif cost == 1 then
      redis.call('ZADD', key, now, nonce .. ':1')
    elseif cost > 1 then
      redis.call('ZADD', key, now, nonce .. '*' .. cost)
      held = held + cost - 1
    end
    count = count + cost
  else
    -- Admitted once the oldest members holding (count + cost - max) units have left the window.
    local blocking = ''
    if cost <= max then
      local need = count + cost - max
      if held == 0 then
        blocking = redis.call('ZRANGE', key, need - 1 + skip, need - 1 + skip, 'WITHSCORES')[2]
      else
        -- Heavier calls among them: their weights, from the oldest, 64 members at a time.
        local start, found, page = skip, nil, nil
        repeat
          page = redis.call('ZRANGE', key, start, start + 63, 'WITHSCORES')
          for i = 1, #page, 2 do
            need = need - (tonumber(string.match(page[i], '%*(%d+)$')) or 1)
            if need <= 0 then
              found = page[i + 1]
              break
            end
          end
          start = start + 64
        until found or #page < 128
        blocking = found or ''
      end
    end
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    reply = reply or {now, first}
    reply[#reply + 1] = blocking
    reply[#reply + 1] = (newest[1] ~= '#' and newest[2]) or ''
  end
end
if held > 0 then
  if -held ~= stored then redis.call('ZADD', key, -held, '#') end
elseif stored then
  redis.call('ZREM', key, '#')
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
