-- An operator's ban of a key: a block `length` us long at its limit's block key (see
-- src/backend/redis/wire/script/block.rs), keeping the offences of a block not yet forgiven.
--
--   KEYS[1]  the limit's block key
--   ARGV[1]  "" (now from Redis's TIME); tests pass "<now us> <minimum TTL ms>"
--   ARGV[2]  the ban's length, us
--   ARGV[3]  the penalty's longest block, us (how long offences are remembered after a block ends)
--
-- Returns {now}.

--> part clock
local length, cap, offences = tonumber(ARGV[2]), tonumber(ARGV[3]), 0
local state = redis.call('GET', KEYS[1])
if state then
  local ends, counted = string.match(state, '^(%d+):(%d+):[pb]$')
  if ends and now < tonumber(ends) + cap then offences = tonumber(counted) end
end
redis.call('SET', KEYS[1], string.format('%d:%d:b', now + length, offences), 'PX',
  math.max(math.ceil((length + cap) / 1000), min_ttl))
return {now}
