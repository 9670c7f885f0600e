-- Sliding window counter, for calls of this one limit (one call, or calls on one key coalesced into one
-- script call): the previous window's count weighted by its overlap with the sliding window, plus the
-- current window's, never above `max`. It answers only what the client cannot know: the client replays the
-- calls on its twin of the algorithm (src/algorithm/sliding_window.rs). Calls of several limits, and charges
-- given back, go through limiter.lua, on the same state.
--
--   KEYS[1]  the limit's key: a string "<w>:<c>:<p>", the window's index, its count, the previous window's
--   ARGV[1]  window us; tests pass "<window us> <now us> <minimum TTL ms>"
--   ARGV[2]  max
--   then each call's cost, in turn; none for one call of cost 1 (the common call)
--
-- Returns now (us) when neither window held anything before the first call; else {now us, the current
-- window's count, the previous window's count}.
--
-- By hand (one call on a window of 5 per 10 s): redis-cli --eval <(cat parts/now.lua sliding_window.lua) rate_limit:demo , 10000000 5

local key, max = KEYS[1], tonumber(ARGV[2])

local index = math.floor(now / window)
local state = redis.pcall('GET', key)
local w, c, p
if type(state) == 'string' then w, c, p = string.match(state, '^(%d+):(%d+):(%d+)$') end
w = tonumber(w)
local first, previous = 0, 0
if w == index then
  first, previous = tonumber(c), tonumber(p)
elseif w == index - 1 then
  previous = tonumber(c)
end
-- Weights are scaled by `window` to stay integers: a unit of the current window weighs `window`.
local elapsed = now - index * window
local room = max * window - previous * (window - elapsed)
local current = first
-- No cost at all is one call of cost 1.
for i = 3, #ARGV > 2 and #ARGV or 3 do
  local cost = 1
  if ARGV[i] then cost = tonumber(ARGV[i]) end
  if (current + cost) * window <= room then current = current + cost end
end
if current > first then
  -- The current window's count weighs until the next window ends.
  local ttl = math.ceil((2 * window - elapsed) / 1000)
  if ttl < min_ttl then ttl = min_ttl end
  redis.call('SET', key, string.format('%d:%d:%d', index, current, previous), 'PX', ttl)
end
if first == 0 and previous == 0 then return now end
return {now, first, previous}
