-- Sliding window counter (twin: src/algorithm/sliding_window.rs): the previous window's count weighted by
-- its overlap with the sliding window, plus the current window's, never above `max`. Its state is a string
-- "<w>:<c>:<p>": the window's index, its count, the previous window's count.

--@read
-- `first`, the current window's count; `second`, the previous window's, when not 0. Weights are scaled by
-- `window` to stay integers: a unit of the current window weighs `window`.
local index = math.floor(now / window)
local state = redis.pcall('GET', key)
local stored, counted, before
if type(state) == 'string' then stored, counted, before = string.match(state, '^(%d+):(%d+):(%d+)$') end
stored = tonumber(stored)
local first, previous = 0, 0
if stored == index then
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
if current > first then
  -- The current window's count weighs until the next window ends.
  local ttl = math.ceil((2 * window - elapsed) / 1000)
  if ttl < min_ttl then ttl = min_ttl end
  redis.call('SET', key, string.format('%d:%d:%d', index, current, previous), 'PX', ttl)
end

--@give_back
local state = redis.pcall('GET', key)
if type(state) ~= 'string' then break end
local stored, counted, before = string.match(state, '^(%d+):(%d+):(%d+)$')
stored, counted, before = tonumber(stored), tonumber(counted), tonumber(before)
local index = tonumber(mark)
if stored == index then
  counted = math.max(counted - units, 0)
elseif stored == index + 1 then
  before = math.max(before - units, 0)
else
  break
end
redis.call('SET', key, string.format('%d:%d:%d', stored, counted, before), 'KEEPTTL')

--@peek
local state = redis.call('GET', key)
local stored, counted, before
if state then stored, counted, before = string.match(state, '^(%d+):(%d+):(%d+)$') end
stored = tonumber(stored)
local index = math.floor(now / window)
if stored == index and (tonumber(counted) > 0 or tonumber(before) > 0) then
  return {now, tonumber(counted), tonumber(before)}
end
if stored == index - 1 and tonumber(counted) > 0 then return {now, 0, tonumber(counted)} end
