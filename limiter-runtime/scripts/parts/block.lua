-- A limit's block, when it is under a penalty (`block_key`): "<until us>:<offences>:<p|b>", read before the
-- limit counts; `block_ends` and `offences` of the block in force or remembered (see src/penalty.rs).
local block, block_ends, offences = nil, nil, 0
if block_key then
  block = redis.call('GET', block_key) or ''
  local ends, counted = string.match(block, '^(%d+):(%d+):[pb]$')
  block_ends, offences = tonumber(ends), tonumber(counted) or 0
end
