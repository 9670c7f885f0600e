-- The buckets' queue of charges, the state token_bucket.lua and leaky_bucket.lua share (their twin:
-- src/algorithm/queue.rs): a string "<t>:<f>:<s>:<g>": when the charges queued have all left (t in whole us,
-- f in 1/max us), since when it has held charges without a pause (s), and what has been given back out of
-- order since then (g, in us x max); then the terms it was last charged under, "@<t|l><window>,<max>,<burst>"
-- (the algorithm's letter, then its window, max and burst, 0 for a line); then, for each charge given back
-- out of order that is still in the queue, "|<e>,<f>,<g>,<units>": its receipt's end and given, and what it
-- gave back (us x max). Empty (nothing, gone) reads as (now, 0, now, 0); a queue an older version
-- wrote has no terms, and is read as charged under the call's. One token, or one slot, weighs `window`; so
-- the queue is measured in us x max.

--@read
-- `first`, how far the queue reaches past now (us x max; 0 when empty); `second`, its run "<s>:<g>" when
-- not empty; `queued`, where it ends as the calls leave it. The algorithm's read sets `tag` first (this
-- call's terms, as the queue keeps them) and `carry` (how its level carries over: "" proportional, "a" as
-- is, "n" not at all). Another algorithm's state is dropped: the key starts afresh (`afresh`, which the
-- client tells): the other bucket's queue (its letter), a sliding window's counts (a string of three
-- numbers), a key of another type holding one (other.lua); any other string reads as nothing, as ever. A
-- queue charged under other terms leaves them in `was` ({window, max, burst}) and `first` at 0, for the
-- algorithm's read to carry its level over (`moved`, written at `write`), unless it is not carried: then
-- it is read as charged under this call's.
local state = redis.pcall('GET', key)
local first, t, f, run, terms, gaps, was, moved = 0, nil, nil, nil, '', '', nil, false
if type(state) == 'table' then
  local wrong = state
  --> other.read
elseif state then
  t, f, run, terms, gaps = string.match(state, '^(%d+):(%d+):(%d+:%d+)(@?[^|]*)(.*)$')
  local other = t and terms ~= '' and string.sub(terms, 1, 2) ~= string.sub(tag, 1, 2)
  if other or (not t and string.match(state, '^%d+:%d+:%d+/?%d*$')) then
    redis.call('DEL', key)
    afresh, t = true, nil
  end
end
if t then
  t, f = tonumber(t), tonumber(f)
  if terms ~= tag and terms ~= '' and carry ~= 'n' then
    local w0, m0, d0 = string.match(terms, '^@%a(%d+),(%d+),(%d+)$')
    if w0 then was = {tonumber(w0), tonumber(m0), tonumber(d0)} end
  end
  if not was and t >= now then first = (t - now) * max + f end
end
local queued, second = first, nil
if first > 0 then second = run end

--@write
-- The queue as the calls left it, with a time to live of its length: whole us past now, and ms up (exact:
-- below 2^53, a float quotient never rounds across an integer).
if queued > first or moved then
  local rest = queued % max
  local ahead = (queued - rest) / max
  local ttl = ahead
  if rest > 0 then ttl = ttl + 1 end
  ttl = math.ceil(ttl / 1000)
  if ttl < min_ttl then ttl = min_ttl end
  local queue
  if first == 0 then
    -- A queue that was empty starts a new run of charges, with nothing given back yet.
    queue = string.format('%d:%d:%d:0', now + ahead, rest, now) .. tag
  else
    queue = string.format('%d:%d:', now + ahead, rest) .. run .. tag .. gaps
  end
  redis.call('SET', key, queue, 'PX', ttl)
end

--@give_back
-- What is left of the charge ahead of now, at most `units`' worth, and nothing once the queue has been empty
-- since (see src/algorithm/queue.rs). Where the charge ends now: where it ended, moved earlier by what was
-- given back since of charges queued before it. Those given back since are g - given in all; those of
-- charges queued after it are among the records.
local ended, fraction, since, given = string.match(mark, '^(%d+):(%d+):(%d+):(%d+)$')
ended, fraction, since, given = tonumber(ended), tonumber(fraction), tonumber(since), tonumber(given)
local state = redis.pcall('GET', key)
local t, f, s, g, terms, gaps
if type(state) == 'string' then
  t, f, s, g, terms, gaps = string.match(state, '^(%d+):(%d+):(%d+):(%d+)(@?[^|]*)(.*)$')
end
t, f, s, g = tonumber(t), tonumber(f), tonumber(s), tonumber(g)
if not g or not given or t < now or s ~= since then break end
local used = (t - now) * max + f
if used == 0 then break end
local records = {}
for e, rf, rg, a in string.gmatch(gaps, '|(%d+),(%d+),(%d+),(%d+)') do
  records[#records + 1] = {tonumber(e), tonumber(rf), tonumber(rg), tonumber(a)}
end
-- Records of charges that have left are forgotten: a record's charge ends where it ended, less what was given
-- back since, plus what charges queued after it gave back; ends grow with the queue.
local oldest, later = #records + 1, 0
for k = #records, 1, -1 do
  local r = records[k]
  if (r[1] - now) * max + r[2] - (g - r[3]) + later <= 0 then break end
  oldest, later = k, later + r[4]
end
local behind = 0
for k = oldest, #records do
  local r = records[k]
  if (r[1] - ended) * max + r[2] - fraction + r[3] - given > 0 then behind = behind + r[4] end
end
local left = math.max((ended - now) * max + fraction - (g - given) + behind, 0)
local back = math.min(left, units * window, used)
if back == 0 then break end
-- The queue's last charge given back moves no other: the queue is as if it had weighed less. Any other is
-- recorded, in the queue's order, for the charges queued after it.
local last = (t - ended) * max + f - fraction + g - given == 0
local records_left, placed, record = {}, last, string.format('|%d,%d,%d,%d', ended, fraction, given, back)
for k = oldest, #records do
  local r = records[k]
  if not placed and (r[1] - ended) * max + r[2] - fraction + r[3] - given > 0 then
    records_left[#records_left + 1], placed = record, true
  end
  records_left[#records_left + 1] = string.format('|%d,%d,%d,%d', r[1], r[2], r[3], r[4])
end
if not placed then records_left[#records_left + 1] = record end
if not last then g = g + back end
used = used - back
if used == 0 then
  redis.call('DEL', key)
  break
end
local ahead = math.floor(used / max)
local ttl = math.max(math.ceil(math.ceil(used / max) / 1000), min_ttl)
redis.call('SET', key, string.format('%d:%d:%d:%d', now + ahead, used - ahead * max, s, g) .. terms
  .. table.concat(records_left), 'PX', ttl)

--@peek
local state = redis.pcall('GET', key)
if type(state) == 'string' then
  local t, f, run = string.match(state, '^(%d+):(%d+):(%d+:%d+)')
  t = tonumber(t)
  if run and t >= now then return {now, (t - now) * max + tonumber(f), run} end
end
