-- Leaky bucket, for shaping (twin: src/algorithm/leaky_bucket.rs): calls leave at a steady `max` per
-- `window`, one slot every window / max; a call takes the next free slot if it starts within `max wait`
-- (`depth`, us), and its twin tells it how long to wait for it. Its state is the buckets' queue (queue.lua).

--@read
-- The max wait, and how the line carries over when the terms change (`depth`: the wait, then "a" when as
-- is, "n" when not carried: a line to an upstream, which the rate its fleet learned re-spaces). Carried over
-- (twin: src/algorithm/carry.rs, which computes in doubles alike): the slots queued stay queued, spaced
-- anew, rounded up to the queue's grain; or, as is, the line ends where it ended, so that every call
-- admitted keeps its slot. The wait is a call's patience, not the line's: its terms leave it out.
local afresh = false
local deep, carry = tonumber(depth), ''
if not deep then
  deep, carry = string.match(depth, '^(%d+)(%a)$')
  deep = tonumber(deep)
end
local tag = string.format('@l%d,%d,0', window, max)
--> queue.read
local limit = deep * max
if was and t >= now and (t > now or f > 0) then
  if carry == 'a' then
    first = (t - now) * max + math.ceil(f * max / was[2])
  else
    first = math.ceil(((t - now) * was[2] + f) * window / was[1])
  end
  queued, moved, run, gaps = first, true, string.format('%d:0', now), ''
  second = run
end

--@pause
-- The line ends no earlier than the upstream's pause: each call's slot lands after it (twin:
-- State::after_pause).
queued = math.max(queued, (paused - now) * max)
block_ends = nil

--@fits
local fits = cost <= max and queued + kept * window <= limit

--@take
queued = queued + cost * window

--@retry
if cost <= max then retry = math.floor((queued + kept * window - limit + max - 1) / max) end

--@write
--> queue.write

--@give_back
-- A slot goes back only from the line's end: moving the end earlier past a slot still held (on any node) would
-- hand that slot out twice. One given back from the middle is a hole, recorded in the line's order
-- ("|<e>,<f>,0,<units>": its end, and what went back, us x max) until the end reaches it, then given back with
-- it (twin: Queue::give_back_slot). What goes back is what is left of the slot ahead of now, at most `units`.
local ended, fraction, since = string.match(mark, '^(%d+):(%d+):(%d+):%d+$')
ended, fraction, since = tonumber(ended), tonumber(fraction), tonumber(since)
local state = redis.pcall('GET', key)
local t, f, s, terms, holes
if type(state) == 'string' then t, f, s, terms, holes = string.match(state, '^(%d+):(%d+):(%d+):%d+(@?[^|]*)(.*)$') end
t, f, s = tonumber(t), tonumber(f), tonumber(s)
if not t or not since or t < now or s ~= since then break end
local used, at = (t - now) * max + f, (ended - now) * max + fraction
if used == 0 or at <= 0 then break end
local back = math.min(at, units * window)
if back == 0 then break end
local gaps = {}
for e, hf, a in string.gmatch(holes, '|(%d+),(%d+),%d+,(%d+)') do
  local hole = {(tonumber(e) - now) * max + tonumber(hf), tonumber(a), tonumber(e), tonumber(hf)}
  if hole[1] > 0 then gaps[#gaps + 1] = hole end
end
if at ~= used then
  local place = #gaps + 1
  for k = #gaps, 1, -1 do
    if gaps[k][1] >= at then place = k end
  end
  table.insert(gaps, place, {at, back, ended, fraction})
else
  used = used - back
  local k = #gaps
  while k >= 1 and used > 0 do
    if gaps[k][1] == used then
      used = used - math.min(gaps[k][2], used)
      table.remove(gaps, k)
      k = #gaps
    else
      k = k - 1
    end
  end
end
if used == 0 then
  redis.call('DEL', key)
  break
end
local records = {}
for k = 1, #gaps do records[k] = string.format('|%d,%d,0,%d', gaps[k][3], gaps[k][4], gaps[k][2]) end
local ahead = math.floor(used / max)
redis.call('SET', key, string.format('%d:%d:%d:0', now + ahead, used - ahead * max, s) .. terms .. table.concat(records),
  'PX', math.max(math.ceil(math.ceil(used / max) / 1000), min_ttl))

--@peek
--> queue.peek
