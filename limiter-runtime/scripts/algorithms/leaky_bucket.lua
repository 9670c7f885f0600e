-- Leaky bucket, for shaping (twin: src/algorithm/leaky_bucket.rs): calls leave at a steady `max` per
-- `window`, one slot every window / max; a call takes the next free slot if it starts within `max wait`
-- (`depth`, us), and its twin tells it how long to wait for it. Its state is the buckets' queue (queue.lua).

--@read
--> queue.read
local limit = tonumber(depth) * max

--@fits
local fits = cost <= max and queued + kept * window <= limit

--@take
queued = queued + cost * window

--@retry
if cost <= max then retry = math.floor((queued + kept * window - limit + max - 1) / max) end

--@write
--> queue.write

--@give_back
--> queue.give_back

--@peek
--> queue.peek
