-- A limit's block, when it is under a penalty (`block_key`): "<until us>:<offences>:<p|b|u>", read before the
-- limit counts; `block_ends` and `offences` of the block in force or remembered (see src/penalty.rs). An
-- upstream's pause (u, scripts/pause.lua) counts no offence: its second field is the upstream's status, a
-- last field (":<thousandths>") the rate its fleet learned, which the client reads; `paused`, when it ends.
local block, block_ends, offences, paused = nil, nil, 0, nil
if block_key then
  block = redis.call('GET', block_key) or ''
  local ends, counted, kind = string.match(block, '^(%d+):(%d+):([pbu])[:%d]*$')
  block_ends, offences = tonumber(ends), tonumber(counted) or 0
  if kind == 'u' then offences, paused = 0, block_ends end
end
