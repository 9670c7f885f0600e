-- Sliding-window log (twin: src/algorithm/sliding_log.rs): at most `max` units in any interval of length
-- `window`; an admission at time s counts while s > now - window. Its state is a sorted set, one member per
-- admitted call scored by its admission time (us): "<nonce>:1" for a call of cost 1, "<nonce>*<cost>" for a
-- heavier one (a cost is a weight, never a number of entries); and "#", scored minus the units in the
-- window, plus 2^52 while heavier calls may be among them (a key an older version wrote has no "#": each of
-- its members is one unit).

--@read
-- `first`, the units in the window, as "#" keeps them: the members that left take their units with them
-- (each one's, read, while heavier calls may be among them). `count`, as the calls leave it.
local HEAVY = 4503599627370496
local written = tonumber(redis.call('ZSCORE', key, '#'))
local first, heavy, weighed = 0, false, false
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
local count, second = first, nil

--@fits
local fits = count + cost <= max

--@take
-- The call's member, and "#" with the units it adds: one command. (Whether a call here was heavier: "#" then
-- keeps its mark for sure.)
if cost > 0 then
  local member = nonce .. ':1'
  if cost > 1 then member, heavy, weighed = nonce .. '*' .. cost, true, true end
  count = count + cost
  written = -count
  if heavy then written = written - HEAVY end
  redis.call('ZADD', key, now, member, written, '#')
end

--@refused
-- Admitted once the oldest members holding (count + cost - max) units have left the window ("#", when there,
-- is the lowest: past it): the score of the member whose leaving admits it ("" when its cost is above max),
-- and the newest member's score, for its twin.
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
notes = notes or {}
notes[#notes + 1] = blocking
notes[#notes + 1] = (newest[1] ~= '#' and newest[2]) or ''

--@retry
if cost <= max then
  retry = window
  if blocking ~= '' then retry = tonumber(blocking) + window - now end
end

--@write
-- "#" as the calls left it: heavier calls no longer marked once none is left (every member one unit again),
-- and gone with the last unit. Every member leaves the window at most `window` from now: so does the key.
if heavy and not weighed and redis.call('ZCARD', key) - 1 == count then heavy = false end
local kept = -count
if heavy then kept = kept - HEAVY end
if count == 0 then
  if written then redis.call('ZREM', key, '#') end
elseif kept ~= written then
  redis.call('ZADD', key, kept, '#')
end
if count > first then
  local ttl = math.ceil(window / 1000)
  if ttl < min_ttl then ttl = min_ttl end
  redis.call('PEXPIRE', key, ttl)
end

--@give_back
-- The call's one member, weighing its cost: it goes, or weighs what is left; "#" counts as much fewer.
if at <= now - window or units == 0 then break end
local member = mark .. ':1'
if cost > 1 then member = mark .. '*' .. cost end
local score = redis.call('ZSCORE', key, member)
if not score then break end
local left = math.max(cost - units, 0)
redis.call('ZREM', key, member)
if left == 1 then
  redis.call('ZADD', key, score, mark .. ':1')
elseif left > 1 then
  redis.call('ZADD', key, score, mark .. '*' .. left)
end
local written = tonumber(redis.call('ZSCORE', key, '#'))
if not written then break end
local total, heavy = -written, false
if total >= 4503599627370496 then total, heavy = total - 4503599627370496, true end
total = total - (cost - left)
if total <= 0 then
  redis.call('ZREM', key, '#')
  break
end
if heavy and redis.call('ZCARD', key) - 1 == total then heavy = false end
if heavy then total = total + 4503599627370496 end
redis.call('ZADD', key, -total, '#')
