-- What an upstream's answer teaches a key (src/outbound/upstream.rs, src/outbound/rate.rs): a pause, kept as a
-- block at the limit's block key, "<until us>:<status>:u" (the upstream's status, 429 or 503; 0 when its quota
-- fields said none is left), unless the key's block in force ends later; and the rate its fleet learned, the
-- block's last field (":<thousandths>" of the limit's max, absent for the whole), moved as the client asks
-- (twin: rate::Move::apply): kept in part after a refusal (of a call spaced for it), stepped up after a success, held under a stated
-- quota, never above the whole nor below the least; remembered for a while after its last move. Calls of the
-- key read the block as they read a ban's; a ban's or a penalty's block in force stays as it is.
--
--   KEYS[1]  the limit's block key
--   ARGV[1]  "" (now from Redis's TIME); tests pass "<now us> <minimum TTL ms>"
--   ARGV[2]  the pause's length, us (0: no pause)
--   ARGV[3]  the upstream's status
--   ARGV[4]  what is kept of the rate, thousandths (1000: all of it)
--   ARGV[5]  what is added back, thousandths
--   ARGV[6]  the most it may be, thousandths
--   ARGV[7]  the least it may be, thousandths
--   ARGV[8]  how long a rate below the whole is remembered after its last move, ms
--   ARGV[9]  the rate the answered call's slot was spaced for: a rate below it is not cut again
--   KEYS[2]  (a line's: a leaky bucket's) the limit's key, and ARGV[10] its max: a rate lowered re-spaces
--            the line, what it holds past now stretched as the rate fell (from/rate), in a new run (the
--            charges before it give nothing back); each node stretches its waiting calls' slots alike
--
-- Returns {now, until, rate, from}: when the key's block in force ends (now when none is), the rate learned,
-- and the rate before.

--> part clock
local length, status = tonumber(ARGV[2]), tonumber(ARGV[3])
local ends_at, rate, paused = now, 1000, nil
local state = redis.call('GET', KEYS[1])
if state then
  local ends, second, kind, learned = string.match(state, '^(%d+):(%d+):([pbu]):?(%d*)$')
  ends = tonumber(ends)
  if kind == 'u' then
    rate = tonumber(learned) or 1000
    if ends > now then ends_at, paused = ends, tonumber(second) end
  elseif kind and ends > now then
    return {now, ends, 1000, 1000}
  end
end
local from, keep = rate, tonumber(ARGV[4])
if rate < tonumber(ARGV[9]) then keep = 1000 end
rate = math.floor(math.min(rate, 1000) * keep / 1000) + tonumber(ARGV[5])
rate = math.max(math.min(rate, tonumber(ARGV[6]), 1000), tonumber(ARGV[7]))
if length > 0 and now + length > ends_at then ends_at, paused = now + length, status end
if KEYS[2] and rate < from then
  local max, queue = tonumber(ARGV[10]), redis.call('GET', KEYS[2])
  local t, f
  if queue then t, f = string.match(queue, '^(%d+):(%d+):') end
  t, f = tonumber(t), tonumber(f)
  if t and t >= now then
    local reach = math.ceil(((t - now) * max + f) * from / rate)
    local ahead = math.floor(reach / max)
    redis.call('SET', KEYS[2], string.format('%d:%d:%d:0', now + ahead, reach - ahead * max, now), 'PX',
      math.max(math.ceil(math.ceil(reach / max) / 1000), min_ttl))
  end
end
if not paused and rate >= 1000 then
  if state then redis.call('DEL', KEYS[1]) end
  return {now, now, rate, from}
end
local text = string.format('%d:%d:u', ends_at, paused or 0)
local ttl = math.ceil((ends_at - now) / 1000)
if rate < 1000 then
  text = text .. string.format(':%d', rate)
  ttl = math.max(ttl, tonumber(ARGV[8]))
end
redis.call('SET', KEYS[1], text, 'PX', math.max(ttl, min_ttl, 1))
return {now, ends_at, rate, from}
