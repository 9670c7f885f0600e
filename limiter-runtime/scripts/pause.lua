-- A pause of a key learned from an upstream's answer (src/outbound/upstream.rs): a block at the limit's block
-- key, "<until us>:<status>:u" (the upstream's status, 429 or 503; 0 when its quota fields said none is left),
-- unless the key's block in force ends later. Calls of the key read it as they read a ban's.
--
--   KEYS[1]  the limit's block key
--   ARGV[1]  "" (now from Redis's TIME); tests pass "<now us> <minimum TTL ms>"
--   ARGV[2]  the pause's length, us
--   ARGV[3]  the upstream's status
--
-- Returns {now, until}: when the key's block in force ends.

--> part clock
local length = tonumber(ARGV[2])
local ends_at = now + length
local state = redis.call('GET', KEYS[1])
if state then
  local ends = tonumber(string.match(state, '^(%d+):%d+:[pbu]$'))
  if ends and ends >= ends_at then return {now, ends} end
end
redis.call('SET', KEYS[1], string.format('%d:%d:u', ends_at, tonumber(ARGV[3])), 'PX',
  math.max(math.ceil(length / 1000), min_ttl))
return {now, ends_at}
