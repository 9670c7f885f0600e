#!lua flags=no-writes
-- Reads one limit's key without charging it or writing anything (the operators' `inspect`): the state each
-- algorithm's own script would find before a call, in that script's reply, so that the client's twin reads it
-- as it reads a decision's. Time comes from Redis (TIME) unless a test passes "now" in.
--
--   KEYS[1]  the limit's key
--   ARGV[1]  algorithm (1 sliding_log, 2 fixed_window, 3 sliding_window, 4 token_bucket, 5 leaky_bucket,
--            6 in_flight, 7 calendar)
--   ARGV[2]  window us (in flight: a permit's time to live); tests pass "<window us> <now us> <ms>"
--   ARGV[3]  max
--
-- Returns now (us) when the key holds nothing; else {now, then as the algorithm's script answers: the
-- window's count (fixed); the count and the end of the period it is of (calendar: the client knows whether
-- that is now's); the current and previous counts (sliding window); the queue's reach past now and
-- its run "<s>:<g>" (buckets); the permits held (in flight); the units in the window, when the admission was
-- made whose leaving lets one more unit in ("" while one fits) and when the newest was (sliding log)}.
--
-- By hand: redis-cli --eval inspect.lua rate_limit:demo , 1 10000000 5

local algorithm, window, now = tonumber(ARGV[1]), tonumber(ARGV[2]), nil
if window then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
else
  window, now = string.match(ARGV[2], '^(%d+) (%d+)')
  window, now = tonumber(window), tonumber(now)
end
local key, max = KEYS[1], tonumber(ARGV[3])

if algorithm == 7 then
  -- The count stored and its period's end: the client's twin counts it only if that is now's period.
  local state = redis.call('HMGET', key, 'w', 'n')
  if state[1] and tonumber(state[2]) > 0 then return {now, tonumber(state[2]), state[1]} end
elseif algorithm == 2 then
  local state = redis.call('HMGET', key, 'w', 'n')
  if tonumber(state[1]) == math.floor(now / window) and tonumber(state[2]) > 0 then
    return {now, tonumber(state[2])}
  end
elseif algorithm == 3 then
  local state = redis.call('GET', key)
  local w, c, p
  if state then w, c, p = string.match(state, '^(%d+):(%d+):(%d+)$') end
  w = tonumber(w)
  local index = math.floor(now / window)
  if w == index and (tonumber(c) > 0 or tonumber(p) > 0) then return {now, tonumber(c), tonumber(p)} end
  if w == index - 1 and tonumber(c) > 0 then return {now, 0, tonumber(c)} end
elseif algorithm == 4 or algorithm == 5 then
  local state = redis.call('GET', key)
  if state then
    local t, f, run = string.match(state, '^(%d+):(%d+):(%d+:%d+)')
    t = tonumber(t)
    if run and t >= now then return {now, (t - now) * max + tonumber(f), run} end
  end
elseif algorithm == 6 then
  local held = redis.call('ZCOUNT', key, '(' .. now, '+inf')
  if held > 0 then return {now, held} end
elseif algorithm == 1 then
  -- Members are scored by their admission time; "#" (the units, negated) is never in this range.
  -- Reads every member in the window: an operator's read, not a decision's.
  local since, count = now - window, 0
  local members = {}
  local start = 0
  repeat
    local page = redis.call('ZRANGEBYSCORE', key, '(' .. since, '+inf', 'WITHSCORES', 'LIMIT', start, 128)
    for m = 1, #page, 2 do
      local units = tonumber(string.match(page[m], '%*(%d+)$')) or 1
      count = count + units
      members[#members + 1] = {units, page[m + 1]}
    end
    start = start + 128
  until #page < 256
  if count == 0 then return now end
  local blocking, need = '', count + 1 - max
  for _, member in ipairs(members) do
    if need <= 0 then break end
    need = need - member[1]
    if need <= 0 then blocking = member[2] end
  end
  return {now, count, blocking, members[#members][2]}
end
return now
