-- Calendar quota (twin: src/algorithm/calendar.rs): at most `max` units per period of the calendar (a day, a
-- week, a month from its billing day, in the rule's time zone). The client says where the periods around its
-- "now" end (`depth`, "<us>:<us>:<us>", computed in the zone); Redis decides which one now is in, on its own
-- clock, so a client whose clock is off by less than a period changes nothing. Its state is the windows'
-- count (count.lua), w the period's end (no d); the expiry is set once, at the period's end.

--@read
local afresh = false
local e0, e1, e2 = string.match(depth, '^(%d+):(%d+):(%d+)$')
local period = e0
if now >= tonumber(e0) then period = e1 end
if now >= tonumber(e1) then period = e2 end
if now >= tonumber(e2) then
  error({err = 'ERR calendar: the periods sent all ended before now: the client clock is a period behind'})
end
local ends = tonumber(period)
-- A hash of another algorithm's (a fixed window's keeps its window's length, d) is dropped: the key starts
-- afresh (`afresh`, which the client tells); so is a key of another type holding another algorithm's state
-- (other.lua). One of another period still current (the period or the zone changed) moves its count into
-- now's.
local state = redis.pcall('HMGET', key, 'w', 'n', 'd')
local open, moved, stamp = false, false, nil
if state.err then
  local wrong = state
  --> other.read
  if not afresh then error(wrong) end
  state = {}
elseif state[3] then
  redis.call('DEL', key)
  state, afresh = {}, true
elseif state[1] and state[1] ~= period and tonumber(state[1]) > now then
  moved = tonumber(state[2]) > 0
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

--@peek
-- The count stored and its period's end: the client's twin counts it only if that is now's period.
local state = redis.pcall('HMGET', key, 'w', 'n')
if not state.err and state[1] and tonumber(state[2]) > 0 then return {now, tonumber(state[2]), state[1]} end
