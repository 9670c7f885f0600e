-- Fixed window, for calls of this one limit (one call, or calls on one key coalesced into one script call):
-- at most `max` units per aligned window [k*window, (k+1)*window); the expiry is set once, when the window
-- opens. It answers only what the client cannot know: the client replays the calls on its twin of the
-- algorithm (src/algorithm/fixed_window.rs). Calls of several limits, and charges given back, go through
-- limiter.lua, on the same state.
--
--   KEYS[1]  the limit's key: a hash, w = the window's index, n = units admitted in it
--   ARGV[1]  window us; tests pass "<window us> <now us> <minimum TTL ms>"
--   ARGV[2]  max
--   then each call's cost, in turn; none for one call of cost 1 (the common call)
--
-- Returns now (us) when the current window held nothing before the first call; else {now us, its count}.
--
-- By hand (one call on a window of 5 per 10 s): redis-cli --eval fixed_window.lua rate_limit:demo , 10000000 5

local window, now, min_ttl = tonumber(ARGV[1]), nil, 0
if window then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
else
  window, now, min_ttl = string.match(ARGV[1], '^(%d+) (%d+) (%d+)$')
  window, now, min_ttl = tonumber(window), tonumber(now), tonumber(min_ttl)
end
local key, max = KEYS[1], tonumber(ARGV[2])

local index = math.floor(now / window)
local state = redis.call('HMGET', key, 'w', 'n')
local open = tonumber(state[1]) == index
local first = 0
if open then first = tonumber(state[2]) end
local count = first
-- No cost at all is one call of cost 1.
for c = 3, #ARGV > 2 and #ARGV or 3 do
  local cost = 1
  if ARGV[c] then cost = tonumber(ARGV[c]) end
  if count + cost <= max then count = count + cost end
end
if count > first then
  if open then
    redis.call('HINCRBY', key, 'n', count - first)
  else
    redis.call('HSET', key, 'w', index, 'n', count)
    local ttl = math.ceil(((index + 1) * window - now) / 1000)
    if ttl < min_ttl then ttl = min_ttl end
    redis.call('PEXPIRE', key, ttl)
  end
end
if first == 0 then return now end
return {now, first}
