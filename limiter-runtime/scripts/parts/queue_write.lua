-- The buckets' write (after token_bucket.lua or leaky_bucket.lua, which run the calls on the queue): writes the
-- queue as the calls left it (`queued`, us x max, from `first` before them; see limiter.lua for its form),
-- with a time to live of its length, and answers what the client's twin replays the calls from.
if queued > first then
  -- Whole us past now, and a TTL of the queue's length, ms up (exact: below 2^53, a float quotient never
  -- rounds across an integer).
  local rest = queued % max
  local ahead = (queued - rest) / max
  local ttl = ahead
  if rest > 0 then ttl = ttl + 1 end
  ttl = math.ceil(ttl / 1000)
  if ttl < min_ttl then ttl = min_ttl end
  local queue
  if first == 0 then
    -- A queue that was empty starts a new run of charges, with nothing given back yet.
    queue = string.format('%d:%d:%d:0', now + ahead, rest, now)
  else
    queue = string.format('%d:%d:', now + ahead, rest) .. run .. gaps
  end
  redis.call('SET', key, queue, 'PX', ttl)
end
if first > 0 then return {now, first, run} end
return now
