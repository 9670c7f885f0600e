-- Fixed window (twin: src/algorithm/fixed_window.rs): at most `max` units per aligned window
-- [k*window, (k+1)*window). Its state is the windows' count (count.lua), w the window's index.

--@read
local period = string.format('%d', math.floor(now / window))
local ends = (tonumber(period) + 1) * window
local state = redis.call('HMGET', key, 'w', 'n')
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
local state = redis.call('HMGET', key, 'w', 'n')
if tonumber(state[1]) == math.floor(now / window) and tonumber(state[2]) > 0 then return {now, tonumber(state[2])} end
