-- Fixed window (twin: src/algorithm/fixed_window.rs): at most `max` units per aligned window
-- [k*window, (k+1)*window). Its state is the windows' count (count.lua), w the window's index, d its length.

--@read
-- A hash of another algorithm's (a calendar's: its w, a period's end, is after now, where a window's index
-- never is) is dropped: the key starts afresh (`afresh`, which the client tells); so is a key of another
-- type holding another algorithm's state (other.lua). One counted in another length (a changed window)
-- moves its count into now's window while its own is still current. A hash an older version wrote has no
-- d: it is read as counted in this length.
local afresh = false
local period = string.format('%d', math.floor(now / window))
local ends = (tonumber(period) + 1) * window
local state = redis.pcall('HMGET', key, 'w', 'n', 'd')
local open, moved, stamp = false, false, window
if state.err then
  local wrong = state
  --> other.read
  if not afresh then error(wrong) end
  state = {}
elseif state[1] and not state[3] and tonumber(state[1]) > now then
  redis.call('DEL', key)
  state, afresh = {}, true
elseif state[3] and tonumber(state[3]) ~= window then
  moved = (tonumber(state[1]) + 1) * tonumber(state[3]) > now and tonumber(state[2]) > 0
else
  open = state[1] == period
end
--> count.read

--@fits
--> count.fits

--@take
--> count.take

--@retry
if cost + kept <= max then retry = ends - now end

--@write
--> count.write

--@give_back
--> count.give_back

--@room
--> count.room

--@peek
local state = redis.pcall('HMGET', key, 'w', 'n')
if not state.err and tonumber(state[1]) == math.floor(now / window) and tonumber(state[2]) > 0 then return {now, tonumber(state[2])} end
