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
-- By hand (one call on a window of 5 per 10 s): redis-cli --eval <(cat parts/now.lua fixed_window.lua parts/count.lua) rate_limit:demo , 10000000 5

local key, max = KEYS[1], tonumber(ARGV[2])

local index = math.floor(now / window)
local state = redis.call('HMGET', key, 'w', 'n')
local open, period, ends = tonumber(state[1]) == index, index, (index + 1) * window
