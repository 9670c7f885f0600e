-- Sliding-window log (twin: src/algorithm/sliding_log.rs): at most `max` units in any interval of length
-- `window`; an admission at time s counts while s > now - window. Its state is a sorted set, one member per
-- admitted call scored by its admission time (us), named by its nonce (16 hex digits), or "<nonce>*<cost>"
-- for a call of a greater cost (a cost is a weight, never a number of entries). While a heavier call may be
-- in the window, "#" is there too, scored minus the units in the window, minus 2^52; without it, every member
-- weighs one unit and ZCARD counts them (the common log, whose calls all cost 1, pays nothing more than a
-- hand-written one). Keys an older version wrote read alike: their members "<nonce>:1" weigh one unit, and
-- their "#" (always there, marked with 2^52 only while heavier calls may be among them) is read as it was
-- written, then dropped once no heavier call is left.

--@read
-- `first`, the units in the window: ZCARD's members, those that left taken away; or, with "#", its units, less
-- the weights of the members that left. `count`, as the calls leave it.
local HEAVY = 4503599627370496
local first, written, heavy, weighed = redis.call('ZCARD', key), nil, false, false
if first > 0 then
  written = tonumber(redis.call('ZSCORE', key, '#'))
  if not written then
    first = first - redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
  else
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
  end
end
local count, second = first, nil

--@fits
local fits = count + cost <= max

--@take
-- The call's member; and, while heavier calls may be in the window, "#" with the units it adds, in the same
-- command.
if cost > 0 then
  local member = nonce
  if cost > 1 then member, heavy, weighed = nonce .. '*' .. cost, true, true end
  count = count + cost
  if heavy then
    written = -count - HEAVY
    redis.call('ZADD', key, now, member, written, '#')
  else
    redis.call('ZADD', key, now, member)
  end
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
-- "#" as the calls left it, while heavier calls may be in the window; gone once none is left (every member
-- one unit again), or with the last unit. Every member leaves the window at most `window` from now: so does the
-- key.
if written then
  if heavy and not weighed and redis.call('ZCARD', key) - 1 == count then heavy = false end
  if heavy and count > 0 then
    if -count - HEAVY ~= written then redis.call('ZADD', key, -count - HEAVY, '#') end
  else
    redis.call('ZREM', key, '#')
  end
end
if count > first then
  local ttl = math.ceil(window / 1000)
  if ttl < min_ttl then ttl = min_ttl end
  redis.call('PEXPIRE', key, ttl)
end

--@give_back
-- The call's one member, weighing its cost (an older version's "<nonce>:1" for a call of cost 1): it goes, or
-- weighs what is left; "#", when there, counts as much fewer.
if at <= now - window or units == 0 then break end
local member = mark
if cost > 1 then member = mark .. '*' .. cost end
local score = redis.call('ZSCORE', key, member)
if not score and cost == 1 then
  member = mark .. ':1'
  score = redis.call('ZSCORE', key, member)
end
if not score then break end
local left = math.max(cost - units, 0)
redis.call('ZREM', key, member)
if left == 1 then
  redis.call('ZADD', key, score, mark)
elseif left > 1 then
  redis.call('ZADD', key, score, mark .. '*' .. left)
end
local written = tonumber(redis.call('ZSCORE', key, '#'))
if not written then break end
local total, heavy = -written, false
if total >= 4503599627370496 then total, heavy = total - 4503599627370496, true end
total = total - (cost - left)
if heavy and redis.call('ZCARD', key) - 1 == total then heavy = false end
if heavy and total > 0 then
  redis.call('ZADD', key, -total - 4503599627370496, '#')
else
  redis.call('ZREM', key, '#')
end

--@peek
-- Every member in the window, with its weight ("#", scored below every admission, is never in this range):
-- an operator's read, not a decision's.
local since, count, members, start = now - window, 0, {}, 0
repeat
  local page = redis.call('ZRANGEBYSCORE', key, '(' .. since, '+inf', 'WITHSCORES', 'LIMIT', start, 128)
  for m = 1, #page, 2 do
    local units = tonumber(string.match(page[m], '%*(%d+)$')) or 1
    count = count + units
    members[#members + 1] = {units, page[m + 1]}
  end
  start = start + 128
until #page < 256
if count > 0 then
  local blocking, need = '', count + 1 - max
  for _, member in ipairs(members) do
    if need <= 0 then break end
    need = need - member[1]
    if need <= 0 then blocking = member[2] end
  end
  return {now, count, blocking, members[#members][2]}
end
