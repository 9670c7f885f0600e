-- Every decision of limiter, and every charge given back, for every algorithm: one atomic script call for
-- all the limits of a batch of calls. Time comes from Redis (TIME) unless a test passes "now" in, so
-- skewed clients share one exact window. Integers throughout (exact while max x window stays below 2^53);
-- no decision depends on a key's TTL, and every write sets the TTL no longer than its state matters.
--
--   KEYS[i]  the key of limit i
--   ARGV[1]  "decide" or "refund"
--   ARGV[2]  now, us -- tests only; "" means Redis TIME
--   ARGV[3]  minimum TTL, ms -- tests only (with ARGV[2]: Redis expires keys on its own clock)
--
-- decide: then, for each limit i (6 arguments): algorithm (1 sliding_log, 2 fixed_window, 3 sliding_window,
--   4 token_bucket, 5 leaky_bucket), window us, max, burst, max wait us, vetoes (1, or 0 for a shadow limit);
--   then, for each call in turn, for each limit: cost, nonce (16 hex digits: names the call's sliding-log
--   members). A call is admitted when every limit that vetoes admits it, and then charged to each; else
--   what it charged is given back at once, and it is charged to none.
--   Returns {now, then for each call: admitted (1 or 0), then for each limit: allowed, remaining,
--   retry_after us, reset_after us, delay us, mark, fraction, since, given} -- the last four name what an
--   admission charged, for giving it back later (the windows: the window's index; the buckets: where the
--   charge ended, in us and 1/max us, and the queue's run and what it had given back).
--
-- refund: then, for each limit (10 arguments): algorithm, window us, max, units to give back, the call's cost,
--   when it was charged (us), its mark (the nonce, for the sliding log), fraction, since and given. Returns
--   {now}.
--
-- By hand (one call on one token bucket of 5 per 10 s):
--   redis-cli --eval limiter.lua rate_limit:demo , decide "" 0 4 10000000 5 5 0 1 1 0000000000000001

local function ceil_div(a, b)
  return math.floor((a + b - 1) / b)
end

local function ttl(after_us, min_ttl)
  return math.max(math.ceil(after_us / 1000), min_ttl)
end

-- A bucket's queue of charges, "<t>:<f>:<s>:<g>": when the charges in it have all left (t in whole us, f in
-- 1/max us), since when it has held charges without a pause (s), and what has been given back since then (g,
-- in us x max). Empty (nothing, gone, or a key left by an older version) reads as (now, 0, now, 0).
local function queue(key, now)
  local state = redis.pcall('GET', key)
  local t, f, s, g
  if type(state) == 'string' then
    t, f, s, g = string.match(state, '^(%d+):(%d+):(%d+):(%d+)$')
  end
  t, f, s, g = tonumber(t), tonumber(f), tonumber(s), tonumber(g)
  if not g or t < now then return now, 0, now, 0 end
  return t, f, s, g
end

-- Stores a queue reaching `used` (us x max) past now; a queue that was empty starts a new run of charges.
local function store_queue(key, now, used, max, since, given, was_empty, min_ttl)
  if was_empty then since, given = now, 0 end
  local ahead = math.floor(used / max)
  local t, f = now + ahead, used - ahead * max
  redis.call('SET', key, string.format('%d:%d:%d:%d', t, f, since, given), 'PX', ttl(ceil_div(used, max), min_ttl))
  return t, f, since, given
end

-- Each algorithm: decide(key, now, window, max, burst, max_wait, cost, nonce, min_ttl) returns allowed,
-- remaining, retry_after, reset_after, delay, and what an admission charged (mark, fraction, since, given);
-- refund(key, now, window, max, units, cost, at, mark, fraction, since, given) gives back what an admission
-- charged, never more, nothing once it has left.
local decide, refund = {}, {}

-- Sliding-window log: at most `max` units in any interval of length `window`. One sorted set per limit, one
-- member per admitted unit, scored by its admission time: "<nonce>:<i>", the call's nonce naming its own.
decide[1] = function(key, now, window, max, burst, max_wait, cost, nonce, min_ttl)
  -- An admission at time s counts while s > now - window.
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local count = redis.call('ZCARD', key)
  if count + cost <= max then
    for i = 1, cost do
      redis.call('ZADD', key, now, nonce .. ':' .. i)
    end
    -- Every member leaves the window at most `window` from now: so does the key.
    redis.call('PEXPIRE', key, ttl(window, min_ttl))
    return 1, max - count - cost, 0, window, 0, 0, 0, 0, 0
  end
  -- A cost above the limit can never be admitted: report the whole window.
  local retry_after = window
  if cost <= max then
    -- Admitted once the (count + cost - max)-th oldest member has left the window.
    local index = count + cost - max - 1
    local oldest = redis.call('ZRANGE', key, index, index, 'WITHSCORES')
    retry_after = tonumber(oldest[2]) + window - now
  end
  local reset_after = 0
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if newest[2] then reset_after = tonumber(newest[2]) + window - now end
  return 0, math.max(max - count, 0), retry_after, reset_after, 0, 0, 0, 0, 0
end

refund[1] = function(key, now, window, max, units, cost, at, nonce)
  if at <= now - window then return end
  for i = cost - units + 1, cost do
    redis.call('ZREM', key, nonce .. ':' .. i)
  end
end

-- Fixed window: at most `max` units per aligned window [k*window, (k+1)*window). One hash per limit: w = the
-- window's index, n = units admitted in it; the expiry is set once, when the window opens.
decide[2] = function(key, now, window, max, burst, max_wait, cost, nonce, min_ttl)
  local index = math.floor(now / window)
  local reset_after = (index + 1) * window - now
  local state = redis.call('HMGET', key, 'w', 'n')
  local count = 0
  if tonumber(state[1]) == index then count = tonumber(state[2]) end
  if count + cost <= max then
    if tonumber(state[1]) == index then
      redis.call('HINCRBY', key, 'n', cost)
    else
      redis.call('HSET', key, 'w', index, 'n', cost)
      redis.call('PEXPIRE', key, ttl(reset_after, min_ttl))
    end
    return 1, max - count - cost, 0, reset_after, 0, index, 0, 0, 0
  end
  local retry_after = reset_after
  if cost > max then retry_after = window end
  return 0, math.max(max - count, 0), retry_after, reset_after, 0, 0, 0, 0, 0
end

refund[2] = function(key, now, window, max, units, cost, at, index)
  local state = redis.call('HMGET', key, 'w', 'n')
  if tonumber(state[1]) == tonumber(index) then
    redis.call('HSET', key, 'n', math.max(tonumber(state[2]) - units, 0))
  end
end

-- Sliding window counter: the previous window's count weighted by its overlap with the sliding window,
-- plus the current window's. One string per limit, "<w>:<c>:<p>": the window's index, its count, the
-- previous window's count.
local function counters(key)
  local state = redis.pcall('GET', key)
  if type(state) ~= 'string' then return nil end
  local w, c, p = string.match(state, '^(%d+):(%d+):(%d+)$')
  return tonumber(w), tonumber(c), tonumber(p)
end

decide[3] = function(key, now, window, max, burst, max_wait, cost, nonce, min_ttl)
  local index = math.floor(now / window)
  local elapsed = now - index * window
  local stored, c, p = counters(key)
  local current, previous = 0, 0
  if stored == index then
    current, previous = c, p
  elseif stored == index - 1 then
    previous = c
  end
  -- Weights are scaled by `window` to stay integers: a unit of the current window weighs `window`.
  local used = previous * (window - elapsed) + current * window
  local capacity = max * window
  if used + cost * window <= capacity then
    current = current + cost
    -- The current window's count weighs until the next window ends.
    local reset_after = 2 * window - elapsed
    redis.call('SET', key, string.format('%d:%d:%d', index, current, previous), 'PX', ttl(reset_after, min_ttl))
    return 1, math.floor((capacity - used - cost * window) / window), 0, reset_after, 0, index, 0, 0, 0
  end
  local retry_after = window
  if cost <= max then
    local room = (max - cost - current) * window
    if room >= 0 then
      -- Later in this window, once the previous window weighs little enough.
      retry_after = window - elapsed - math.floor(room / previous)
    else
      -- In the next window, once this window (then the previous one) weighs little enough.
      retry_after = window - elapsed + window - math.floor((max - cost) * window / current)
    end
  end
  local reset_after = 0
  if current > 0 then
    reset_after = 2 * window - elapsed
  elseif previous > 0 then
    reset_after = window - elapsed
  end
  return 0, math.max(math.floor((capacity - used) / window), 0), retry_after, reset_after, 0, 0, 0, 0, 0
end

refund[3] = function(key, now, window, max, units, cost, at, index)
  index = tonumber(index)
  local stored, c, p = counters(key)
  if stored == index then
    c = math.max(c - units, 0)
  elseif stored == index + 1 then
    p = math.max(p - units, 0)
  else
    return
  end
  redis.call('SET', key, string.format('%d:%d:%d', stored, c, p), 'KEEPTTL')
end

-- Token bucket, as GCRA: a bucket of `burst` tokens refilled at `max` per `window`; the state is when the
-- bucket is full again. Never more than burst + max * t / window admitted over any interval t.
decide[4] = function(key, now, window, max, burst, max_wait, cost, nonce, min_ttl)
  local tat, frac, since, given = queue(key, now)
  -- The part of the bucket in use, in us x max: one token weighs `window`.
  local used = (tat - now) * max + frac
  local capacity = burst * window
  local need = cost * window
  if cost <= burst and used + need <= capacity then
    local t, f, s, g = store_queue(key, now, used + need, max, since, given, used == 0, min_ttl)
    used = used + need
    return 1, math.floor((capacity - used) / window), 0, ceil_div(used, max), 0, t, f, s, g
  end
  local retry_after = window
  if cost <= burst then retry_after = ceil_div(used + need - capacity, max) end
  return 0, math.max(math.floor((capacity - used) / window), 0), retry_after, ceil_div(used, max), 0, 0, 0, 0, 0
end

-- The buckets give back what is left of a charge, at most `units`' worth: where it ended, less what was given
-- back since (charges queued before it may have moved it earlier by that much); nothing once the queue has been
-- empty since. Exactly the charge when nothing was given back meanwhile and nothing queued after it; never
-- more than its absence would have.
local function refund_queue(key, now, window, max, units, cost, at, mark, fraction, since, given)
  local t, f, s, g = queue(key, now)
  local used = (t - now) * max + f
  if used == 0 or s ~= since then return end
  local left = math.max((tonumber(mark) - now) * max + fraction - (g - given), 0)
  local back = math.min(left, units * window, used)
  -- Charges queued after it move earlier: their receipts are to know it.
  if t ~= tonumber(mark) or f ~= fraction then g = g + back end
  used = used - back
  if used == 0 then
    redis.call('DEL', key)
  else
    store_queue(key, now, used, max, s, g, false, 0)
  end
end

refund[4] = refund_queue

-- Leaky bucket, for shaping: calls leave at a steady `max` per `window`, one slot every window / max. A call
-- takes the next free slot if it starts within `max_wait`, and is told how long to wait for it (delay).
decide[5] = function(key, now, window, max, burst, max_wait, cost, nonce, min_ttl)
  local tat, frac, since, given = queue(key, now)
  -- How far ahead the next free slot starts, in us x max: one slot weighs `window`.
  local queued = (tat - now) * max + frac
  local limit = max_wait * max
  if cost <= max and queued <= limit then
    local after = queued + cost * window
    local t, f, s, g = store_queue(key, now, after, max, since, given, queued == 0, min_ttl)
    local remaining = 0
    if after <= limit then remaining = math.min(max, math.floor((limit - after) / window) + 1) end
    return 1, remaining, 0, ceil_div(after, max), ceil_div(queued, max), t, f, s, g
  end
  local retry_after = window
  if cost <= max then retry_after = ceil_div(queued - limit, max) end
  return 0, 0, retry_after, ceil_div(queued, max), 0, 0, 0, 0, 0
end

refund[5] = refund_queue

local now = tonumber(ARGV[2])
local min_ttl = tonumber(ARGV[3]) or 0
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limits = #KEYS

if ARGV[1] == 'refund' then
  for i = 1, limits do
    local a = 3 + (i - 1) * 10
    local n = function(j) return tonumber(ARGV[a + j]) end
    refund[n(1)](KEYS[i], now, n(2), n(3), n(4), n(5), n(6), ARGV[a + 7], n(8), n(9), n(10))
  end
  return {now}
end

local reply = {now}
local calls = (#ARGV - 3 - 6 * limits) / (2 * limits)
for call = 1, calls do
  local admitted = 1
  local results = {}
  for i = 1, limits do
    local l = 3 + (i - 1) * 6
    local a = 3 + 6 * limits + ((call - 1) * limits + (i - 1)) * 2
    local n = function(j) return tonumber(ARGV[l + j]) end
    local r = {decide[n(1)](KEYS[i], now, n(2), n(3), n(4), n(5), tonumber(ARGV[a + 1]), ARGV[a + 2], min_ttl)}
    if r[1] == 0 and ARGV[l + 6] == '1' then admitted = 0 end
    results[i] = r
  end
  if admitted == 0 then
    -- Given back at once: the call is charged to none, and each limit reports what it has left.
    for i = 1, limits do
      local r = results[i]
      if r[1] == 1 then
        local l = 3 + (i - 1) * 6
        local a = 3 + 6 * limits + ((call - 1) * limits + (i - 1)) * 2
        local algorithm, cost = tonumber(ARGV[l + 1]), tonumber(ARGV[a + 1])
        local mark = r[6]
        if algorithm == 1 then mark = ARGV[a + 2] end
        refund[algorithm](KEYS[i], now, tonumber(ARGV[l + 2]), tonumber(ARGV[l + 3]), cost, cost, now, mark, r[7],
          r[8], r[9])
        r[2] = r[2] + cost
      end
    end
  end
  reply[#reply + 1] = admitted
  for i = 1, limits do
    for j = 1, 9 do
      reply[#reply + 1] = results[i][j]
    end
  end
end
return reply
