-- The buckets' read (token_bucket.lua, leaky_bucket.lua are assembled between it and queue_write.lua):
-- the limit's key and max, and its queue (KEYS[1], a string "<t>:<f>:<s>:<g>", see limiter.lua): `first`,
-- how far it reaches past now (us x max; 0 when empty, gone, or a key left by an older version), then its
-- run and give-backs as stored.
local key, max = KEYS[1], tonumber(ARGV[2])
local state = redis.pcall('GET', key)
local first, t, f, run, gaps = 0, nil, nil, nil, ''
if type(state) == 'string' then
  t, f, run, gaps = string.match(state, '^(%d+):(%d+):(%d+:%d+)(.*)$')
  t = tonumber(t)
  if run and t >= now then first = (t - now) * max + tonumber(f) end
end
