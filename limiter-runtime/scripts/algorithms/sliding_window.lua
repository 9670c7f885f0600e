-- Sliding window counter (twin: src/algorithm/sliding_window.rs): the previous window's count weighted by
-- its overlap with the sliding window, plus the current window's, never above `max`. Its state is a string
-- "<w>:<c>:<p>/<d>": the window's index, its count, the previous window's count, and the window's length
-- (us) they were counted in (no "/<d>" in a key an older version wrote: read as counted in this length).

--@read
-- `first`, the current window's count; `second`, the previous window's, when not 0. Weights are scaled by
-- `window` to stay integers: a unit of the current window weighs `window`. A bucket's queue (a string of
-- four numbers) is dropped: the key starts afresh (`afresh`, which the client tells); so is a key of
-- another type holding another algorithm's state (other.lua); any other string reads as nothing, as ever.
-- One counted in another length (a changed window) moves what it weighs now, in whole units rounded up,
-- into now's window as its count (`moved`, written at `write`; twin: src/algorithm/carry.rs).
local afresh, moved = false, false
local index = math.floor(now / window)
local state = redis.pcall('GET', key)
local stored, counted, before, length
if type(state) == 'table' then
  local wrong = state
  --> other.read
elseif state then
  stored, counted, before, length = string.match(state, '^(%d+):(%d+):(%d+)/?(%d*)$')
  if not stored and string.match(state, '^%d+:%d+:%d+:%d+') then
    redis.call('DEL', key)
    afresh = true
  end
end
stored, length = tonumber(stored), tonumber(length)
local first, previous = 0, 0
if length and length ~= window then
  local since, weighed = math.max(now - stored * length, 0), 0
  if since < length then
    weighed = tonumber(before) * (length - since) + tonumber(counted) * length
  elseif since < 2 * length then
    weighed = tonumber(counted) * (2 * length - since)
  end
  first = math.ceil(weighed / length)
  moved = first > 0
elseif stored == index then
  first, previous = tonumber(counted), tonumber(before)
elseif stored == index - 1 then
  previous = tonumber(counted)
end
local elapsed = now - index * window
local room = max * window - previous * (window - elapsed)
local current, second = first, nil
if previous > 0 then second = previous end

--@fits
local fits = (current + cost + kept) * window <= room

--@take
current = current + cost

--@retry
if cost + kept <= max then
  local left = (max - cost - kept - current) * window
  if left >= 0 then
    -- Later in this window, once the previous window weighs little enough.
    retry = window - elapsed - math.floor(left / previous)
  else
    -- In the next window, once this window (then the previous one) weighs little enough.
    retry = window - elapsed + window - math.floor((max - cost - kept) * window / current)
  end
end

--@write
if current > first or moved then
  -- The current window's count weighs until the next window ends.
  local ttl = math.ceil((2 * window - elapsed) / 1000)
  if ttl < min_ttl then ttl = min_ttl end
  redis.call('SET', key, string.format('%d:%d:%d/%d', index, current, previous, window), 'PX', ttl)
end

--@give_back
-- Nothing once the windows are others (or counted in another length).
local state = redis.pcall('GET', key)
if type(state) ~= 'string' then break end
local stored, counted, before, length = string.match(state, '^(%d+):(%d+):(%d+)(/?%d*)$')
if not stored or (length ~= '' and tonumber(string.sub(length, 2)) ~= window) then break end
stored, counted, before = tonumber(stored), tonumber(counted), tonumber(before)
local index = tonumber(mark)
if stored == index then
  counted = math.max(counted - units, 0)
elseif stored == index + 1 then
  before = math.max(before - units, 0)
else
  break
end
redis.call('SET', key, string.format('%d:%d:%d', stored, counted, before) .. length, 'KEEPTTL')

--@peek
local state = redis.pcall('GET', key)
local stored, counted, before
if type(state) == 'string' then stored, counted, before = string.match(state, '^(%d+):(%d+):(%d+)/?%d*$') end
stored = tonumber(stored)
local index = math.floor(now / window)
if stored == index and (tonumber(counted) > 0 or tonumber(before) > 0) then
  return {now, tonumber(counted), tonumber(before)}
end
if stored == index - 1 and tonumber(counted) > 0 then return {now, 0, tonumber(counted)} end
