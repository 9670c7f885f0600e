-- Every decision of limiter for calls of several limits (stacked), and every charge given back, for every
-- algorithm: one atomic script call for all the limits of a batch of calls. (Calls of one limit, the common
-- call, go through their algorithm's own script, sliding_log.lua and the others, on the same state.) Time
-- comes from Redis (TIME) unless a test passes "now" in, so skewed clients share one exact window. Integers
-- throughout (exact while max x window stays below 2^53); no decision depends on a key's TTL, and every write
-- sets the TTL no longer than its state matters.
--
--   KEYS[i]  the key of limit i
--   ARGV[1]  "decide", "batch", "penalized", "lease", "give_back" or "ban"; tests add " <now us> <minimum TTL ms>" (Redis expires keys on its own
--            clock, not the test's)
--
-- decide: then, for each limit i (4 arguments): algorithm (1 sliding_log, 2 fixed_window, 3 sliding_window,
--   4 token_bucket, 5 leaky_bucket, 6 in_flight, 7 calendar; negated for a shadow limit, which does not veto),
--   window us (in flight: a permit's time to live; calendar: the current period's length), max, and the
--   bucket's depth (burst, for the token bucket; max wait us, for the leaky bucket; for a calendar, where the
--   previous, current and next periods end, "<us>:<us>:<us>", as calendar.lua takes them; else 0); then, for each call in turn: its nonce (16 hex digits naming its
--   sliding-log members and its permits, or "" when it has none), and its cost on each limit. A call is admitted when every limit that vetoes admits it, and then charged
--   to each; else what it charged is given back at once, and it is charged to none. So too when it meets a
--   fault past a limit that charged it (a key holding another type): given back, then the fault answered.
--   Returns {now, then for each call, for each limit: allowed (1 or 0), remaining, retry_after us,
--   reset_after us, then the leaky bucket's delay us, then the buckets' receipt: the queue as the call left
--   it (below; "" when it was not admitted), for giving its charge back later}.
--
-- batch (or "penalized", a batch with limits under a penalty): then the number of shapes, and each shape: a
--   limit's 4 arguments as "decide" takes them (in "penalized", the depth of a limit under a penalty followed
--   by "|<first block us>|<longest block us>"); then groups,
--   each one call (or calls on the same limits), decided in turn exactly as "decide" decides it alone: its
--   head, the indices (from 1) of its limits' shapes, comma-separated, and "/<calls>" when it has more than one
--   call; then each call's nonce and costs. A group's keys follow the previous group's in KEYS: its limits'
--   keys, then the block key of each of its limits under a penalty. A limit whose key is blocked answers
--   allowed 2 (refused, counting nothing; retry_after the block's remaining time); a call it refuses itself,
--   one that it could admit some day, starts a block (and answers 2, retry_after the block's length: the
--   penalty's, or the time the limit would admit the call if that is later). The calls of a batch are many callers' calls on any keys, sent as
--   one script call. Returns {now, then for each group: its answers as "decide" returns them (without now),
--   written as one string, comma-separated (one string is far cheaper for a client to read than as many
--   values); or, when the group met a fault (a key holding another type, a calendar a period behind), "!" and
--   the error's text}.
--
-- lease: then, for the one limit (a token bucket, 4, or a fixed window, 2): algorithm, window us, max, burst,
--   the call's cost, the units wanted (at least the cost), and, when an earlier lease of this node is given
--   back with it, that lease's units left, its units, when it was taken (us) and its mark (as for give_back).
--   Takes as many of the units wanted as the limit has room for, if that is at least the cost, else none;
--   returns {now, units taken, then the state before taking them, as the algorithm's own script answers it:
--   the window's count, or the queue's reach past now and its "<s>:<g>" ("" when empty)}.
--
-- give_back: then, for each limit (7 arguments): algorithm, window us, max, units to give back, the call's cost,
--   when it was charged (us), and its mark: its nonce (the sliding log), the window's index (the windows),
--   the period's end (calendar), its receipt (the buckets). Returns {now}.
--
-- ban: KEYS[1] a limit's block key; then the ban's length and the penalty's longest block (us). Returns {now}.
--
-- Redis runs this whole chunk on every call, and every function it defines is a closure made anew each
-- time: so deciding defines none (each algorithm is a branch of the loop at the end), and giving back, which
-- only give-backs and calls of several limits can need, is the one function, made only for them.
--
-- The state of each algorithm, one key per limit:
--   sliding log     a sorted set, one member per admitted call, scored by its admission time: "<nonce>:1", or
--                   "<nonce>*<cost>" for a call of a greater cost; and "#", scored minus the units in the window
--                   (plus 2^52 while heavier calls may be among them)
--   fixed window    a hash: w = the window's index, n = units admitted in it
--   calendar        a hash: w = the period's end (us), n = units admitted in it
--   sliding window  a string "<w>:<c>:<p>": the window's index, its count, the previous window's count
--   buckets         a string "<t>:<f>:<s>:<g>", the queue of charges: when they have all left (t in whole us,
--                   f in 1/max us), since when it has held charges without a pause (s), and what has been
--                   given back out of order since then (g, in us x max); then, for each charge given back
--                   out of order that is still in the queue, "|<e>,<f>,<g>,<units>": its receipt's end and
--                   given, and what it gave back (us x max). Empty (nothing, gone, or a key left by an older
--                   version) reads as (now, 0, now, 0).
--   in flight       a sorted set, one member per permit held, named by its call's nonce and scored by when it
--                   expires (us; renewed while its holder runs: see renew.lua)
--
-- By hand (one call on one token bucket of 5 per 10 s):
--   redis-cli --eval limiter.lua rate_limit:demo , decide 4 10000000 5 5 "" 1

local floor, ceil, max_of, min_of = math.floor, math.ceil, math.max, math.min
local QUEUE, COUNTERS = '^(%d+):(%d+):(%d+):(%d+)$', '^(%d+):(%d+):(%d+)$'
-- A bucket's state: its queue and run, then the give-backs it holds out of order ("|<e>,<f>,<g>,<units>").
local STATE, RUN = '^(%d+):(%d+):(%d+):(%d+)(.*)$', '^(%d+):(%d+):(%d+:%d+)(.*)$'
-- A calendar's ends: the previous, the current and the next periods'.
local ENDS = COUNTERS
-- The sliding log's mark of heavier calls in "#"'s score (see sliding_log.lua).
local HEAVY = 4503599627370496
-- A key's block (see src/penalty.rs): "<until us>:<offences>:<p|b>", p a penalty's, b a ban's.
local BLOCK = '^(%d+):(%d+):[pb]$'

local op, now, min_ttl = ARGV[1], nil, 0
if op ~= 'decide' and op ~= 'batch' and op ~= 'give_back' and op ~= 'lease' and op ~= 'ban' and op ~= 'penalized' then
  op, now, min_ttl = string.match(op, '^([%a_]+) (%d+) (%d+)$')
  now, min_ttl = tonumber(now), tonumber(min_ttl)
end
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limits = #KEYS
-- A batch with limits under a penalty: only it reads penalties and blocks (a plain batch pays nothing).
local penalized = op == 'penalized'

if op == 'ban' then
  -- An operator's ban of a key, KEYS[1] its limit's block key: a block `length` us long, keeping the offences
  -- of a block not yet forgiven.
  local length, cap, offences = tonumber(ARGV[2]), tonumber(ARGV[3]), 0
  local state = redis.call('GET', KEYS[1])
  if state then
    local ends, counted = string.match(state, BLOCK)
    if ends and now < tonumber(ends) + cap then offences = tonumber(counted) end
  end
  redis.call('SET', KEYS[1], string.format('%d:%d:b', now + length, offences), 'PX',
    max_of(ceil((length + cap) / 1000), min_ttl))
  return {now}
end

-- Gives back at most `units` of what one admission charged, never more, nothing once it has left.
local give_back
if op ~= 'decide' or limits > 1 then
  give_back = function(key, algorithm, window, max, units, cost, at, mark)
    if algorithm == 6 then
      -- A permit goes back whole.
      redis.call('ZREM', key, mark)
    elseif algorithm == 1 then
      -- The call's one member, weighing its cost: it goes, or weighs what is left; "#" counts as much fewer.
      if at <= now - window or units == 0 then return end
      local member = mark .. ':1'
      if cost > 1 then member = mark .. '*' .. cost end
      local score = redis.call('ZSCORE', key, member)
      if not score then return end
      local left = max_of(cost - units, 0)
      redis.call('ZREM', key, member)
      if left == 1 then
        redis.call('ZADD', key, score, mark .. ':1')
      elseif left > 1 then
        redis.call('ZADD', key, score, mark .. '*' .. left)
      end
      local written = tonumber(redis.call('ZSCORE', key, '#'))
      if not written then return end
      local total, heavy = -written, false
      if total >= HEAVY then total, heavy = total - HEAVY, true end
      total = total - (cost - left)
      if total <= 0 then
        redis.call('ZREM', key, '#')
        return
      end
      if heavy and redis.call('ZCARD', key) - 1 == total then heavy = false end
      if heavy then total = total + HEAVY end
      redis.call('ZADD', key, -total, '#')
    elseif algorithm == 2 or algorithm == 7 then
      local state = redis.call('HMGET', key, 'w', 'n')
      if tonumber(state[1]) == tonumber(mark) then
        redis.call('HSET', key, 'n', max_of(tonumber(state[2]) - units, 0))
      end
    elseif algorithm == 3 then
      local state = redis.pcall('GET', key)
      if type(state) ~= 'string' then return end
      local w, c, p = string.match(state, COUNTERS)
      w, c, p = tonumber(w), tonumber(c), tonumber(p)
      local index = tonumber(mark)
      if w == index then
        c = max_of(c - units, 0)
      elseif w == index + 1 then
        p = max_of(p - units, 0)
      else
        return
      end
      redis.call('SET', key, string.format('%d:%d:%d', w, c, p), 'KEEPTTL')
    else
      -- The buckets give back what is left of the charge ahead of now, at most `units`' worth, and nothing
      -- once the queue has been empty since (see src/algorithm/queue.rs). Where the charge ends now: where it
      -- ended, moved earlier by what was given back since of charges queued before it. Those given back
      -- since are g - given in all; those of charges queued after it are among the records.
      local ended, fraction, since, given = string.match(mark, QUEUE)
      ended, fraction, since, given = tonumber(ended), tonumber(fraction), tonumber(since), tonumber(given)
      local state = redis.pcall('GET', key)
      local t, f, s, g, gaps
      if type(state) == 'string' then t, f, s, g, gaps = string.match(state, STATE) end
      t, f, s, g = tonumber(t), tonumber(f), tonumber(s), tonumber(g)
      if not g or not given or t < now or s ~= since then return end
      local used = (t - now) * max + f
      if used == 0 then return end
      local records = {}
      for e, rf, rg, a in string.gmatch(gaps, '|(%d+),(%d+),(%d+),(%d+)') do
        records[#records + 1] = {tonumber(e), tonumber(rf), tonumber(rg), tonumber(a)}
      end
      -- Records of charges that have left are forgotten: a record's charge ends where it ended, less what
      -- was given back since, plus what charges queued after it gave back; ends grow with the queue.
      local first, later = #records + 1, 0
      for k = #records, 1, -1 do
        local r = records[k]
        if (r[1] - now) * max + r[2] - (g - r[3]) + later <= 0 then break end
        first, later = k, later + r[4]
      end
      local behind = 0
      for k = first, #records do
        local r = records[k]
        if (r[1] - ended) * max + r[2] - fraction + r[3] - given > 0 then behind = behind + r[4] end
      end
      local left = max_of((ended - now) * max + fraction - (g - given) + behind, 0)
      local back = min_of(left, units * window, used)
      if back == 0 then return end
      -- The queue's last charge given back moves no other: the queue is as if it had weighed less. Any
      -- other is recorded, in the queue's order, for the charges queued after it.
      local last = (t - ended) * max + f - fraction + g - given == 0
      local kept, placed, record = {}, last, string.format('|%d,%d,%d,%d', ended, fraction, given, back)
      for k = first, #records do
        local r = records[k]
        if not placed and (r[1] - ended) * max + r[2] - fraction + r[3] - given > 0 then
          kept[#kept + 1], placed = record, true
        end
        kept[#kept + 1] = string.format('|%d,%d,%d,%d', r[1], r[2], r[3], r[4])
      end
      if not placed then kept[#kept + 1] = record end
      if not last then g = g + back end
      used = used - back
      if used == 0 then
        redis.call('DEL', key)
        return
      end
      local ahead = floor(used / max)
      local ttl = max_of(ceil(ceil(used / max) / 1000), min_ttl)
      redis.call('SET', key, string.format('%d:%d:%d:%d', now + ahead, used - ahead * max, s, g) ..
        table.concat(kept), 'PX', ttl)
    end
  end
end

if op == 'give_back' then
  for i = 1, limits do
    local a = 1 + (i - 1) * 7
    give_back(KEYS[i], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]),
      tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), ARGV[a + 7])
  end
  return {now}
end

if op == 'lease' then
  local key, algorithm, window, max = KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local cost, want = tonumber(ARGV[6]), tonumber(ARGV[7])
  if ARGV[8] then
    give_back(key, algorithm, window, max, tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11])
  end
  if algorithm == 2 then
    local index = floor(now / window)
    local state = redis.call('HMGET', key, 'w', 'n')
    local open = tonumber(state[1]) == index
    local count = 0
    if open then count = tonumber(state[2]) end
    local take = min_of(want, max - count)
    if take < cost then return {now, 0, count} end
    if open then
      redis.call('HINCRBY', key, 'n', take)
    else
      redis.call('HSET', key, 'w', index, 'n', take)
      redis.call('PEXPIRE', key, max_of(ceil(((index + 1) * window - now) / 1000), min_ttl))
    end
    return {now, take, count}
  end
  local state = redis.pcall('GET', key)
  local t, f, run, gaps
  if type(state) == 'string' then t, f, run, gaps = string.match(state, RUN) end
  t, f = tonumber(t), tonumber(f)
  local first = 0
  if run and t >= now then first = (t - now) * max + f end
  local answer = run
  if first == 0 then answer = '' end
  -- One token weighs `window`: the bucket has room for what is left of its capacity.
  local take = min_of(want, floor((tonumber(ARGV[5]) * window - first) / window))
  if take < cost then return {now, 0, first, answer} end
  if first == 0 then run, gaps = string.format('%d:0', now), '' end
  local queued = first + take * window
  local ahead = floor(queued / max)
  redis.call('SET', key, string.format('%d:%d:', now + ahead, queued - ahead * max) .. run .. gaps, 'PX',
    max_of(ceil(ceil(queued / max) / 1000), min_ttl))
  return {now, take, first, answer}
end

-- A limit's 4 arguments from ARGV[a + 1]: {algorithm (negated for a shadow), window, max, depth as a number,
-- depth as sent (a calendar's ends)}.
-- A limit under a penalty has "|<first us>|<cap us>" after its depth: {..., first, cap}.
local function shape_at(a)
  local depth, first, cap = ARGV[a + 4], nil, nil
  if penalized and string.find(depth, '|', 1, true) then
    depth, first, cap = string.match(depth, '^([^|]*)|(%d+)|(%d+)$')
  end
  return {tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(depth), depth,
    tonumber(first), tonumber(cap)}
end

-- The blocks of a group's limits under a penalty: their keys follow the group's limits' keys, in the limits'
-- order. Returns the index in KEYS of each such limit's block key, by limit, and how many there are.
local function blocks_of(k, shapes)
  local blocks, count = nil, 0
  for i = 1, #shapes do
    if shapes[i][6] then
      count = count + 1
      blocks = blocks or {}
      blocks[i] = k + #shapes + count
    end
  end
  return blocks, count
end

-- Gives back what one call of several limits charged: its limits' keys are KEYS[k + 1 ..], their shapes
-- `shapes`, its nonce ARGV[c], and its answers in `reply` past `r`, limit by limit (the buckets' receipt
-- among them). A limit that answered nothing (the one that met a fault, and those after it) charged nothing.
-- With `report`, each limit's remaining counts what was given back. (Made only where a call of several
-- limits can be: give_back exists.)
local give_back_call
if give_back then
  give_back_call = function(k, shapes, c, reply, r, report)
    for i = 1, #shapes do
      if reply[r + 1] == nil then return end
      local shape = shapes[i]
      local algorithm = math.abs(shape[1])
      local window, max, cost = shape[2], shape[3], tonumber(ARGV[c + i])
      -- Past this limit's allowed, remaining, retry_after, reset_after (and delay): its receipt.
      local receipt = r + 4
      if algorithm == 5 then receipt = receipt + 1 end
      if reply[r + 1] == 1 then
        local mark = floor(now / window)
        if algorithm == 7 then
          -- The period it charged: the one now is in, as decide found it.
          local e0, e1, e2 = string.match(shape[5], ENDS)
          mark = e0
          if now >= tonumber(e0) then mark = e1 end
          if now >= tonumber(e1) then mark = e2 end
        elseif algorithm == 1 or algorithm == 6 then
          mark = ARGV[c]
        elseif algorithm >= 4 then
          mark = reply[receipt + 1]
        end
        give_back(KEYS[k + i], algorithm, window, max, cost, cost, now, mark)
        if report and algorithm == 6 then
          reply[r + 2] = reply[r + 2] + 1
        elseif report then
          reply[r + 2] = reply[r + 2] + cost
        end
      end
      r = receipt
      if algorithm == 4 or algorithm == 5 then r = r + 1 end
    end
  end
end

-- The call of several limits being decided, while it is (as give_back_call takes it): a fault it meets past
-- a limit that charged it gives that charge back (undo), for Redis keeps what a script wrote before its
-- error, and the call, answered with the fault, is decided by its on_error and must be charged to none.
local doing_k, doing_shapes, doing_c, doing_reply, doing_start

local undo
if give_back then
  undo = function()
    if not doing_shapes then return end
    local shapes = doing_shapes
    doing_shapes = nil
    give_back_call(doing_k, shapes, doing_c, doing_reply, doing_start, false)
  end
end

-- Decides the `calls` calls of one group (one call's limits, or calls on the same limits coalesced): its
-- limits' keys are KEYS[k + 1 ..], their shapes `shapes` (see shape_at), and each call's nonce and costs are
-- ARGV[c ..]. Appends each call's answers to `reply` from index `n` + 1; returns the index of the last.
local function decide(k, shapes, c, calls, reply, n)
  local limits = #shapes
  local blocks = penalized and blocks_of(k, shapes)
  for call = 1, calls do
    local nonce = ARGV[c]
    local start = n
    if limits > 1 then doing_k, doing_shapes, doing_c, doing_reply, doing_start = k, shapes, c, reply, start end
    local admitted = true
    for i = 1, limits do
      local shape = shapes[i]
      local key, algorithm = KEYS[k + i], shape[1]
      local vetoes = algorithm > 0
      if not vetoes then algorithm = -algorithm end
      local window, max, cost = shape[2], shape[3], tonumber(ARGV[c + i])
      local allowed, remaining, retry_after, reset_after, delay, receipt = 0, 0, 0, 0, 0, ""
      -- A limit under a penalty: its key's block, read before it counts; while in force, the call is refused
      -- (allowed 2), counting nothing.
      local block, ends, offences = blocks and blocks[i], nil, nil
      if block then
        local state = redis.call('GET', KEYS[block])
        if state then ends, offences = string.match(state, BLOCK) end
        ends, offences = tonumber(ends), tonumber(offences)
      end

      if ends and ends > now then
        allowed, retry_after, reset_after = 2, ends - now, ends - now
      elseif algorithm == 1 then
        -- Sliding-window log: at most `max` units in any interval of length `window`. An admission at time s
        -- counts while s > now - window. One member per call ("<nonce>:1", or "<nonce>*<cost>" for a heavier
        -- one), and "#" scored minus the units in the window, plus 2^52 while heavier calls may be among them
        -- (see sliding_log.lua).
        local written = tonumber(redis.call('ZSCORE', key, '#'))
        local count, heavy = 0, false
        if written then
          count = -written
          if count >= HEAVY then count, heavy = count - HEAVY, true end
          if heavy then
            for _, member in ipairs(redis.call('ZRANGEBYSCORE', key, 0, now - window)) do
              count = count - (tonumber(string.match(member, '%*(%d+)$')) or 1)
            end
            redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
            if redis.call('ZCARD', key) - 1 == count then heavy = false end
          else
            count = count - redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
          end
        else
          count = redis.call('ZCARD', key)
          if count > 0 then
            redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
            count = redis.call('ZCARD', key)
          end
        end
        local skip, kept = 0, nil
        if written then skip = 1 end
        if count + cost <= max then
          if cost > 0 then
            local member = nonce .. ':1'
            if cost > 1 then member, heavy = nonce .. '*' .. cost, true end
            kept = -(count + cost)
            if heavy then kept = kept - HEAVY end
            redis.call('ZADD', key, now, member, kept, '#')
            written = kept
          end
          -- Every member leaves the window at most `window` from now: so does the key.
          redis.call('PEXPIRE', key, max_of(ceil(window / 1000), min_ttl))
          allowed, remaining, reset_after = 1, max - count - cost, window
        else
          -- A cost above the limit can never be admitted: report the whole window. Else admitted once the
          -- oldest members holding (count + cost - max) units have left the window ("#" is the lowest).
          retry_after = window
          if cost <= max and not heavy then
            local index = count + cost - max - 1 + skip
            local oldest = redis.call('ZRANGE', key, index, index, 'WITHSCORES')
            retry_after = tonumber(oldest[2]) + window - now
          elseif cost <= max then
            -- Heavier calls may be among them: their weights, from the oldest, 64 members at a time.
            local need, blocking, start, page = count + cost - max, nil, skip, nil
            repeat
              page = redis.call('ZRANGE', key, start, start + 63, 'WITHSCORES')
              for m = 1, #page, 2 do
                need = need - (tonumber(string.match(page[m], '%*(%d+)$')) or 1)
                if need <= 0 then
                  blocking = tonumber(page[m + 1])
                  break
                end
              end
              start = start + 64
            until blocking or #page < 128
            if blocking then retry_after = blocking + window - now end
          end
          local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
          if newest[2] and newest[1] ~= '#' then reset_after = tonumber(newest[2]) + window - now end
          remaining = max_of(max - count, 0)
        end
        -- "#" as the members that left, and the call, left it.
        local total = count
        if allowed == 1 then total = count + cost end
        kept = -total
        if heavy then kept = kept - HEAVY end
        if total == 0 then
          if written then redis.call('ZREM', key, '#') end
        elseif kept ~= written then
          redis.call('ZADD', key, kept, '#')
        end

      elseif algorithm == 2 or algorithm == 7 then
        -- Fixed window: at most `max` units per aligned window [k*window, (k+1)*window); the expiry is set
        -- once, when the window opens. A calendar's windows are the periods of the calendar, each named by its
        -- end: the client says where the periods around its "now" end, Redis which one now is in (see
        -- calendar.lua).
        local index
        if algorithm == 2 then
          index = floor(now / window)
          reset_after = (index + 1) * window - now
        else
          local e0, e1, e2 = string.match(shape[5], ENDS)
          index = e0
          if now >= tonumber(e0) then index = e1 end
          if now >= tonumber(e1) then index = e2 end
          if now >= tonumber(e2) then
            error({err = 'ERR calendar: the periods sent all ended before now: the client clock is a period behind'})
          end
          reset_after = tonumber(index) - now
        end
        local state = redis.call('HMGET', key, 'w', 'n')
        local open = tonumber(state[1]) == tonumber(index)
        local count = 0
        if open then count = tonumber(state[2]) end
        if count + cost <= max then
          if open then
            redis.call('HINCRBY', key, 'n', cost)
          else
            redis.call('HSET', key, 'w', index, 'n', cost)
            redis.call('PEXPIRE', key, max_of(ceil(reset_after / 1000), min_ttl))
          end
          allowed, remaining = 1, max - count - cost
        else
          retry_after = reset_after
          if cost > max then retry_after = window end
          remaining = max_of(max - count, 0)
        end

      elseif algorithm == 3 then
        -- Sliding window counter: the previous window's count weighted by its overlap with the sliding window,
        -- plus the current window's. Weights are scaled by `window` to stay integers: a unit of the current
        -- window weighs `window`.
        local index = floor(now / window)
        local elapsed = now - index * window
        local state = redis.pcall('GET', key)
        local w, c, p
        if type(state) == 'string' then w, c, p = string.match(state, COUNTERS) end
        w = tonumber(w)
        local current, previous = 0, 0
        if w == index then
          current, previous = tonumber(c), tonumber(p)
        elseif w == index - 1 then
          previous = tonumber(c)
        end
        local used = previous * (window - elapsed) + current * window
        local capacity = max * window
        if used + cost * window <= capacity then
          -- The current window's count weighs until the next window ends.
          reset_after = 2 * window - elapsed
          local ttl = max_of(ceil(reset_after / 1000), min_ttl)
          redis.call('SET', key, string.format('%d:%d:%d', index, current + cost, previous), 'PX', ttl)
          allowed, remaining = 1, floor((capacity - used - cost * window) / window)
        else
          retry_after = window
          if cost <= max then
            local room = (max - cost - current) * window
            if room >= 0 then
              -- Later in this window, once the previous window weighs little enough.
              retry_after = window - elapsed - floor(room / previous)
            else
              -- In the next window, once this window (then the previous one) weighs little enough.
              retry_after = window - elapsed + window - floor((max - cost) * window / current)
            end
          end
          if current > 0 then
            reset_after = 2 * window - elapsed
          elseif previous > 0 then
            reset_after = window - elapsed
          end
          remaining = max_of(floor((capacity - used) / window), 0)
        end

      elseif algorithm == 6 then
        -- In flight: at most `max` permits held at once, one per call whatever its cost; a permit expires
        -- `window` after it was taken or last renewed, unless it is given back first.
        local held = redis.call('ZCARD', key)
        if held > 0 then held = held - redis.call('ZREMRANGEBYSCORE', key, '-inf', now) end
        if held < max then
          redis.call('ZADD', key, now + window, nonce)
          redis.call('PEXPIRE', key, max_of(ceil(window / 1000), min_ttl))
          allowed, remaining = 1, max - held - 1
        end

      else
        -- The buckets: a queue of charges, measured in us x max (one token, or one slot, weighs `window`). Its
        -- run ("<s>:<g>") and its records are carried over as they are, unless the queue was empty.
        local state = redis.pcall('GET', key)
        local t, f, run, gaps
        if type(state) == 'string' then t, f, run, gaps = string.match(state, RUN) end
        t, f = tonumber(t), tonumber(f)
        if not run or t < now then t, f = now, 0 end
        local queued = (t - now) * max + f
        -- Where the queue ends once this call is in it, if it is admitted.
        local after
        if algorithm == 4 then
          -- Token bucket, as GCRA: a bucket of `burst` tokens refilled at `max` per `window`, full again at
          -- the queue's end. Never more than burst + max * t / window admitted over any interval t.
          local burst = shape[4]
          local capacity, need = burst * window, cost * window
          if cost <= burst and queued + need <= capacity then
            after = queued + need
            remaining, reset_after = floor((capacity - after) / window), floor((after + max - 1) / max)
          else
            retry_after = window
            if cost <= burst then retry_after = floor((queued + need - capacity + max - 1) / max) end
            remaining, reset_after = max_of(floor((capacity - queued) / window), 0), floor((queued + max - 1) / max)
          end
        else
          -- Leaky bucket, for shaping: calls leave at a steady `max` per `window`, one slot every window / max.
          -- A call takes the next free slot if it starts within `max wait`, and is told how long to wait for it.
          local limit = shape[4] * max
          if cost <= max and queued <= limit then
            after = queued + cost * window
            if after <= limit then remaining = min_of(max, floor((limit - after) / window) + 1) end
            reset_after, delay = floor((after + max - 1) / max), floor((queued + max - 1) / max)
          else
            retry_after = window
            if cost <= max then retry_after = floor((queued - limit + max - 1) / max) end
            reset_after = floor((queued + max - 1) / max)
          end
        end
        if after then
          local ahead = floor(after / max)
          if queued == 0 then
            -- A queue that was empty starts a new run of charges.
            receipt = string.format('%d:%d:%d:0', now + ahead, after - ahead * max, now)
          else
            receipt = string.format('%d:%d:%s', now + ahead, after - ahead * max, run)
          end
          if queued > 0 and gaps ~= '' then
            redis.call('SET', key, receipt .. gaps, 'PX', max_of(ceil(reset_after / 1000), min_ttl))
          else
            redis.call('SET', key, receipt, 'PX', max_of(ceil(reset_after / 1000), min_ttl))
          end
          allowed = 1
        end
      end

      -- The limit's own refusal of a call it could admit some day is an offence: it starts a block.
      -- (A cap of zero: no penalty, the limit's blocks read only while a ban is in force under its policy.)
      if allowed == 0 and block and shape[7] > 0 and (algorithm == 6 or cost <= max)
          and (algorithm ~= 4 or cost <= shape[4]) then
        -- The first length, or twice the last one's up to the cap if the key was not clean for the cap since
        -- its last block ended.
        local first, cap = shape[6], shape[7]
        if not ends or now >= ends + cap then offences = 0 end
        offences = min_of(offences + 1, 64)
        local length = first
        for _ = 2, offences do
          length = length * 2
          if length >= cap then break end
        end
        -- The block lasts at least until the limit would admit the call (its retry_after): a client that
        -- waits as long as it is told is admitted, never refused by the limit and so never an offender for it.
        length = max_of(min_of(length, cap), retry_after)
        redis.call('SET', KEYS[block], string.format('%d:%d:p', now + length, offences), 'PX',
          max_of(ceil((length + cap) / 1000), min_ttl))
        allowed, remaining, retry_after, reset_after = 2, 0, length, max_of(reset_after, length)
      end
      if allowed ~= 1 and vetoes then admitted = false end
      reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4] = allowed, remaining, retry_after, reset_after
      n = n + 4
      if algorithm == 5 then
        reply[n + 1] = delay
        n = n + 1
      end
      if algorithm == 4 or algorithm == 5 then
        reply[n + 1] = receipt
        n = n + 1
      end
    end

    if not admitted then
      -- Given back at once: the call is charged to none, and each limit reports what it has left. (Only a
      -- call of several limits gets here having charged one: so `give_back_call` exists.)
      give_back_call(k, shapes, c, reply, start, true)
    end
    c = c + 1 + limits
  end
  return n
end

if op == 'decide' then
  -- Sized for one call on one limit, for growing a table costs Redis more than filling it (Redis reads a
  -- reply up to its first nil).
  local reply = {now, nil, nil, nil, nil, nil, nil}
  local shapes = {}
  for i = 1, limits do shapes[i] = shape_at(1 + (i - 1) * 4) end
  local calls = (#ARGV - 1 - 4 * limits) / (1 + limits)
  if limits == 1 then
    decide(0, shapes, 2 + 4 * limits, calls, reply, 1)
    return reply
  end
  -- A fault met past a limit that charged the call: what it charged is given back, then the fault answered.
  local decided, fault = pcall(decide, 0, shapes, 2 + 4 * limits, calls, reply, 1)
  if not decided then
    undo()
    error(fault, 0)
  end
  return reply
end

-- batch: the shapes, then the groups, each decided as `decide` would decide it alone, in turn; a group's fault
-- (a key of the wrong type, a calendar a period behind, Redis out of memory) is its answer, and the next group
-- goes on.
local shapes = {}
for i = 1, tonumber(ARGV[2]) do shapes[i] = shape_at(2 + (i - 1) * 4) end
local reply, k, a = {now}, 0, 3 + 4 * #shapes
while a <= #ARGV do
  local head = ARGV[a]
  local group, calls = {shapes[tonumber(head)]}, 1
  if not group[1] then
    local indices, many = string.match(head, '^([%d,]+)/?(%d*)$')
    group = {}
    for index in string.gmatch(indices, '%d+') do group[#group + 1] = shapes[tonumber(index)] end
    calls = tonumber(many) or 1
  end
  local answers = {}
  doing_shapes = nil
  local decided, fault = pcall(decide, k, group, a + 1, calls, answers, 0)
  if decided then
    -- Whole numbers written whole (Lua writes a number of more than 14 digits in exponent form).
    for i = 1, #answers do
      if type(answers[i]) == 'number' then answers[i] = string.format('%d', answers[i]) end
    end
    reply[#reply + 1] = table.concat(answers, ',')
  else
    -- What the group's call of several limits charged before the fault goes back: the fault is its answer.
    undo()
    if type(fault) == 'table' then fault = fault.err end
    reply[#reply + 1] = '!' .. tostring(fault)
  end
  k = k + #group
  if penalized then
    local _, blocked = blocks_of(k - #group, group)
    k = k + blocked
  end
  a = a + 1 + calls * (1 + #group)
end
return reply
