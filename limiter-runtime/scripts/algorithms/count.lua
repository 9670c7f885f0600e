-- The windows' count, the state fixed_window.lua and calendar.lua share (a hash: w = the window, n = units
-- admitted in it): their read finds the window now is in (`period`, as the hash's w holds it, ending at
-- `ends` us) and the hash (`state`), then this reads its count.

--@read
-- `first`, the window's count (0 when the hash holds another window's); `count`, as the calls leave it.
local open = state[1] == period
local first = 0
if open then first = tonumber(state[2]) end
local count, second = first, nil

--@fits
local fits = count + cost + kept <= max

--@take
count = count + cost

--@write
-- The expiry is set once, when the window opens.
if count > first then
  if open then
    redis.call('HINCRBY', key, 'n', count - first)
  else
    redis.call('HSET', key, 'w', period, 'n', count)
    local ttl = math.ceil((ends - now) / 1000)
    if ttl < min_ttl then ttl = min_ttl end
    redis.call('PEXPIRE', key, ttl)
  end
end

--@give_back
local state = redis.call('HMGET', key, 'w', 'n')
if state[1] == mark then
  redis.call('HSET', key, 'n', math.max(tonumber(state[2]) - units, 0))
end

--@room
room = max - kept - count
