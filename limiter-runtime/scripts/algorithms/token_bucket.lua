-- Token bucket as GCRA (twin: src/algorithm/token_bucket.rs): a bucket of `burst` tokens (`depth`) refilled
-- at `max` per `window`, full again at the queue's end; never more than burst + max * t / window admitted
-- over any interval t. Its state is the buckets' queue (queue.lua).

--@read
--> queue.read
local capacity = tonumber(depth) * window

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
