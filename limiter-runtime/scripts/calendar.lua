-- Calendar quota, for calls of this one limit (one call, or calls on one key coalesced into one script call):
-- at most `max` units per period of the calendar (a day, a week, a month from its billing day, in the rule's
-- time zone). The client says where the periods around its "now" end, computed in the zone; Redis decides
-- which one "now" is in, on its own clock, so a client whose clock is off by less than a period changes
-- nothing. A fixed window whose windows are the periods, each named by its end; the expiry is set once, at
-- the period's end. It answers only what the client cannot know: the client replays the calls on its twin
-- (src/algorithm/calendar.rs). Calls of several limits, and charges given back, go through limiter.lua, on
-- the same state.
--
--   KEYS[1]  the limit's key: a hash, w = the period's end (us since the Unix epoch), n = units admitted in it
--   ARGV[1]  where the previous, the current and the next periods end, "<us>:<us>:<us>"; tests add
--            " <now us> <minimum TTL ms>"
--   ARGV[2]  max
--   then each call's cost, in turn; none for one call of cost 1 (the common call)
--
-- Returns now (us) when the current period held nothing before the first call; else {now us, its count}.
-- A client whose periods all ended (its clock a whole period behind) is refused with an error.
--
-- By hand (one call on a quota of 5 for the day 2026-11-26 UTC):
--   redis-cli --eval <(cat calendar.lua parts/count.lua) rate_limit:demo , 1764115200000000:1764201600000000:1764288000000000 5

local e0, e1, e2, test_now, test_ttl = string.match(ARGV[1], '^(%d+):(%d+):(%d+) ?(%d*) ?(%d*)$')
local now, min_ttl = tonumber(test_now), tonumber(test_ttl) or 0
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
local key, max = KEYS[1], tonumber(ARGV[2])

-- The period "now" is in, by its end (as the client wrote it).
local period = e0
if now >= tonumber(e0) then period = e1 end
if now >= tonumber(e1) then period = e2 end
if now >= tonumber(e2) then
  return redis.error_reply('ERR calendar: the periods sent all ended before now: the client clock is a period behind')
end

local state = redis.call('HMGET', key, 'w', 'n')
local open, ends = state[1] == period, tonumber(period)
