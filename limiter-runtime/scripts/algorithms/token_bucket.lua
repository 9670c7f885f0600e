-- Token bucket as GCRA (twin: src/algorithm/token_bucket.rs): a bucket of `burst` tokens (`depth`) refilled
-- at `max` per `window`, full again at the queue's end; never more than burst + max * t / window admitted
-- over any interval t. Its state is the buckets' queue (queue.lua).

--@read
-- The burst, and how the level carries over when the terms change (`depth`: the burst, then "a" when as is,
-- "n" when not carried). Carried over (twin: src/algorithm/carry.rs, which computes in doubles alike), the
-- tokens in use keep their share of the burst, or as many tokens are left as there were (at most the burst),
-- rounded up to the queue's grain: never more left than before.
local afresh = false
local deep, carry = tonumber(depth), ''
if not deep then
  deep, carry = string.match(depth, '^(%d+)(%a)$')
  deep = tonumber(deep)
end
local tag = string.format('@t%d,%d,%d', window, max, deep)
--> queue.read
local capacity = deep * window
if was and t >= now and (t > now or f > 0) then
  local used, had = (t - now) * was[2] + f, math.max(was[3], 1)
  if carry == 'a' then
    first = math.ceil(math.min(math.max(used * window / was[1] + (deep - had) * window, 0), deep * window))
  else
    first = math.ceil(used * deep * window / (had * was[1]))
  end
  queued, moved, run, gaps, second = first, first > 0, string.format('%d:0', now), '', nil
  if moved then second = run else redis.call('DEL', key) end
end

--@fits
local need = (cost + kept) * window
local fits = need <= capacity and queued + need <= capacity

--@take
queued = queued + cost * window

--@retry
if cost <= max and (cost + kept) * window <= capacity then
  retry = math.floor((queued + (cost + kept) * window - capacity + max - 1) / max)
end

--@write
--> queue.write

--@give_back
--> queue.give_back

--@room
room = math.floor((capacity - first) / window) - kept

--@peek
--> queue.peek
