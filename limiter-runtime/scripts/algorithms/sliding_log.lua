-- Sliding-window log (twin: src/algorithm/sliding_log.rs): at most `max` units in any interval of length
-- `window`; an admission at time s counts while s > now - window. Its state is a sorted set, one member per
-- script call that admitted calls, scored by the admission time (us), named by the nonce (16 hex digits) of
-- the first call it admitted, or "<nonce>*<units>" when they weigh more than one unit (a cost is a weight,
-- never a number of entries: the calls on one key coalesced into one script call are one member). While a heavier call may be
-- in the window, "#" is there too, scored minus the units in the window, minus 2^52; without it, every member
-- weighs one unit and ZCARD counts them (the common log, whose calls all cost 1, pays nothing more than a
-- hand-written one). Keys an older version wrote read alike: their members "<nonce>:1" weigh one unit, and
-- their "#" (always there, marked with 2^52 only while heavier calls may be among them) is read as it was
-- written, then dropped once no heavier call is left.

--@read
-- `first`, the units in the window: ZCARD's members, those that left taken away; or, with "#", its units, less
-- the weights of the members that left. `count`, as the calls leave it.
-- A key of another type holding another algorithm's state is dropped (other.lua).
local HEAVY = 4503599627370496
local first, written, heavy, weighed = redis.pcall('ZCARD', key), nil, false, false
local afresh = false
if type(first) ~= 'number' then
  local wrong = first
  --> other.read
  if not afresh then error(wrong) end
  first = 0
elseif first > 0 then
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
-- `pending`, the units admitted here, written as one member named by `named`, the first call's nonce.
local count, second, pending, named = first, nil, 0, nil

--@fits
local fits = count + cost + kept <= max

--@take
if cost > 0 then
  count, pending = count + cost, pending + cost
  named = named or nonce
end

--@refused
-- Admitted once the oldest members holding (count + cost + kept - max) units have left the window ("#", when there,
-- is the lowest: past it): the score of the member whose leaving admits it ("" when its cost is above max;
-- now when it is the units admitted here, not yet written), and the newest member's score, for its twin.
local blocking, skip = '', 0
if written then skip = 1 end
local asked = cost + kept
if asked <= max and count + asked - max > count - pending then
  blocking = string.format('%d', now)
elseif asked <= max and not heavy then
  local index = count + asked - max - 1 + skip
  blocking = redis.call('ZRANGE', key, index, index, 'WITHSCORES')[2]
elseif asked <= max then
  -- Heavier calls may be among them: their weights, from the oldest, 64 members at a time.
  local need, start, page = count + asked - max, skip, nil
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
notes = notes or {}
notes[#notes + 1] = blocking
if pending > 0 then
  notes[#notes + 1] = string.format('%d', now)
else
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  notes[#notes + 1] = (newest[1] ~= '#' and newest[2]) or ''
  if newest[1] and newest[1] ~= '#' then
    -- The key lives while its newest member is in the window, as it is now: a window grown since that member
    -- was written keeps it longer than its expiry then said (twin: the store's expiry, `reset_after`).
    local ttl = math.ceil((tonumber(newest[2]) + window - now) / 1000)
    if ttl < min_ttl then ttl = min_ttl end
    redis.call('PEXPIRE', key, ttl)
  end
end

--@retry
if cost + kept <= max then
  retry = window
  if blocking ~= '' then retry = tonumber(blocking) + window - now end
end

--@write
-- The units admitted here, one member; "#" as the calls left it, while heavier calls may be in the window
-- (written with the member, one command), gone once none is left (every member one unit again), or with the
-- last unit. Every member leaves the window at most `window` from now: so does the key.
if pending > 0 then
  local member = named
  if pending > 1 then member, heavy, weighed = named .. '*' .. pending, true, true end
  if heavy then
    written = -count - HEAVY
    redis.call('ZADD', key, now, member, written, '#')
  else
    redis.call('ZADD', key, now, member)
  end
end
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
-- The member the call was admitted in (`mark`, named by the first call of its script call, at the same
-- instant; an older version's "<nonce>:1" for a call of cost 1): it weighs as much less as the call gives
-- back of its own cost, or goes; "#", when there, counts as much fewer.
if at <= now - window or units == 0 then break end
local members = redis.pcall('ZRANGEBYSCORE', key, at, at)
if members.err then break end
local member
for _, admitted in ipairs(members) do
  if string.sub(admitted, 1, #mark) == mark then
    member = admitted
    break
  end
end
if not member then break end
local weight = tonumber(string.match(member, '%*(%d+)$')) or 1
local back = math.min(units, cost, weight)
local left = weight - back
redis.call('ZREM', key, member)
if left == 1 then
  redis.call('ZADD', key, at, mark)
elseif left > 1 then
  redis.call('ZADD', key, at, mark .. '*' .. left)
end
local written = tonumber(redis.call('ZSCORE', key, '#'))
if not written then break end
local total, heavy = -written, false
if total >= 4503599627370496 then total, heavy = total - 4503599627370496, true end
total = total - back
if heavy and redis.call('ZCARD', key) - 1 == total then heavy = false end
if heavy and total > 0 then
  redis.call('ZADD', key, -total - 4503599627370496, '#')
else
  redis.call('ZREM', key, '#')
end

--@peek
-- Every member in the window, with its weight ("#", scored below every admission, is never in this range):
-- an operator's read, not a decision's. A key of another type holds none.
local since, count, members, start = now - window, 0, {}, 0
local page = redis.pcall('ZRANGEBYSCORE', key, '(' .. since, '+inf', 'WITHSCORES', 'LIMIT', 0, 128)
while not page.err do
  for m = 1, #page, 2 do
    local units = tonumber(string.match(page[m], '%*(%d+)$')) or 1
    count = count + units
    members[#members + 1] = {units, page[m + 1]}
  end
  start = start + 128
  if #page < 256 then break end
  page = redis.call('ZRANGEBYSCORE', key, '(' .. since, '+inf', 'WITHSCORES', 'LIMIT', start, 128)
end
if count > 0 then
  local blocking, need = '', count + 1 - max
  for _, member in ipairs(members) do
    if need <= 0 then break end
    need = need - member[1]
    if need <= 0 then blocking = member[2] end
  end
  return {now, count, blocking, members[#members][2]}
end
