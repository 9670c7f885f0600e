-- The limit's own refusal of a call it could admit some day (`retry`, when it would) is an offence under a
-- penalty, unless it refused the call only for the share kept above its priority (`kept`: it fits without
-- it): it starts a block (a cap of zero: no penalty, the limit's blocks read only while a ban is in force
-- under its policy). The first length, or twice the last one's up to the cap if the key was not clean for the
-- cap since its last block ended; and at least until the limit would admit the call, so that a client that
-- waits as long as it is told is never an offender for it. Never during an upstream's pause (`paused`): a
-- call refused then, by an algorithm that waits the pause out, is refused for the upstream's line, and the
-- pause stays.
local reserved = false
if block_key and kept > 0 then
  local asked = kept
  kept = 0
  --> fits
  reserved, kept = fits, asked
end
if block_key and cap > 0 and max > 0 and not reserved and not (paused and paused > now) then
  local retry
  --> retry
  if retry then
    if not block_ends or now >= block_ends + cap then offences = 0 end
    offences = math.min(offences + 1, 64)
    local length = block_first
    for _ = 2, offences do
      length = length * 2
      if length >= cap then break end
    end
    length = math.max(math.min(length, cap), retry)
    block_ends = now + length
    redis.call('SET', block_key, string.format('%d:%d:p', block_ends, offences), 'PX',
      math.max(math.ceil((length + cap) / 1000), min_ttl))
  end
end
