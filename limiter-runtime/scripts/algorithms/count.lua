-- The windows' count, the state fixed_window.lua and calendar.lua share (a hash: w = the window, n = units
-- admitted in it; a fixed window's d = the window's length, us, it was counted in): their read finds the
-- window now is in (`period`, as the hash's w holds it, ending at `ends` us) and the hash (`state`), and
-- whether the hash holds that window (`open`), or another one still current that the limit's changed window
-- (period) moves into now's (`moved`: a count has no times, so all of it may fall in the new window, and
-- carries whole; twin: src/algorithm/carry.rs); then this reads its count. A window's hash is written with
-- `stamp` (its length, or nil for a calendar's).

--@read
-- `first`, the window's count (0 when the hash holds another window's, and none moved); `count`, as the calls
-- leave it.
local first = 0
if open or moved then first = tonumber(state[2]) end
local count, second = first, nil

--@fits
local fits = count + cost + kept <= max

--@take
count = count + cost

--@write
-- The expiry is set once, when the window opens (or a count moves into it, even if no call is charged).
if count > first or moved then
  if open then
    redis.call('HINCRBY', key, 'n', count - first)
  elseif stamp then
    redis.call('HSET', key, 'w', period, 'n', count, 'd', stamp)
  else
    redis.call('HSET', key, 'w', period, 'n', count)
  end
  if not open then
    local ttl = math.ceil((ends - now) / 1000)
    if ttl < min_ttl then ttl = min_ttl end
    redis.call('PEXPIRE', key, ttl)
  end
end

--@give_back
-- Nothing once the window is another (or counted in another length: `d`, the fixed window's).
local state = redis.pcall('HMGET', key, 'w', 'n', 'd')
if state.err or state[1] ~= mark or (state[3] and tonumber(state[3]) ~= window) then break end
redis.call('HSET', key, 'n', math.max(tonumber(state[2]) - units, 0))

--@room
room = max - kept - count
