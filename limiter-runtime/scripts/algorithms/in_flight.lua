-- In flight (twin: src/algorithm/in_flight.rs): at most `max` permits of the key held at once, one per call
-- whatever its cost. Its state is a sorted set, one member per permit held, named by its call's nonce and
-- scored by when it expires (us): `window` (a permit's time to live) after it was taken or last renewed
-- (renew.lua), unless it is given back first, so that the permits of a node that dies come back.

--@read
-- `first`, the permits held (those that expired are not). A key of another type holding another
-- algorithm's state is dropped (other.lua).
local first, afresh = redis.pcall('ZCARD', key), false
if type(first) ~= 'number' then
  local wrong = first
  --> other.read
  if not afresh then error(wrong) end
  first = 0
elseif first > 0 then
  first = first - redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
end
local held, second = first, nil

--@fits
local fits = held + kept < max

--@take
redis.call('ZADD', key, now + window, nonce)
held = held + 1

--@retry
-- When a permit comes back is its holder's to say.
if kept < max then retry = 0 end

--@write
if held > first then
  -- The key lives as long as its latest permit.
  local ms = math.ceil(window / 1000)
  if ms < min_ttl then ms = min_ttl end
  redis.call('PEXPIRE', key, ms)
end

--@give_back
-- A permit goes back whole (from a sorted set: a key another algorithm took over holds none).
redis.pcall('ZREM', key, mark)

--@peek
local held = redis.pcall('ZCOUNT', key, '(' .. now, '+inf')
if type(held) == 'number' and held > 0 then return {now, held} end
