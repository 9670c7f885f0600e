-- Decides a batch of groups in one script call: each group one caller's call (on one limit, or on several
-- stacked, decided as one), or several calls on the same limits (one key's, coalesced), in turn, exactly as
-- each would be decided alone; with blocks for limits under a penalty. Assembled at build time (see
-- build.rs) from each algorithm's file of algorithms/, the same lines as one_limit.lua runs. It answers the
-- state before the calls, from which the client's twins replay them for their outcomes.
--
--   KEYS     each group's keys, in turn: its limits', then the block key of each of its limits under a
--            penalty (see src/backend/redis/wire/script/block.rs)
--   ARGV[1]  "" (now from Redis's TIME); tests pass "<now us> <minimum TTL ms>"
--   ARGV[2]  the number of shapes; then each shape (4 arguments): the algorithm's code (its place, from 1,
--            in limiter-grammar's algorithm::NAMES, as the branches `if code == <code> then -- <algorithm>`
--            below name them; negated for a shadow limit, which does not veto), window us, max and depth as
--            one_limit.lua takes them, followed, under a penalty, by "|<first block us>|<longest block us>"
--   then the groups, each: its head (the indices, from 1, of its limits' shapes, comma-separated, and
--   "/<calls>" when it has more than one call), then each call's nonce ("" when it names nothing) and its
--   cost on each limit
--
-- A call of several limits is admitted when every limit that vetoes fits it; then each limit that fits it is
-- charged, and none otherwise. A limit whose key is blocked refuses (counting nothing), but one whose
-- algorithm waits out an upstream's pause (the leaky bucket: algorithms/README.md, `pause`); a call a limit
-- under a penalty refuses itself, one it could admit some day, starts a block, at least as long as the limit
-- would refuse it (the block's arithmetic is src/penalty.rs's), unless a pause is in force.
--
-- Returns {now, then for each group one string}: the state each limit held, as one_limit.lua answers it,
-- comma-separated (the block, "<until us>:<offences>:<p|b>" or "", and "|" before it, under a penalty): a
-- group of one limit, before its first call, then its refusals' times; a group of several limits, before
-- each call, for each limit in turn, ";" between them. Or, when the group met a fault (a key holding another
-- type, a calendar a period behind), "!" and the error's text: nothing it read is charged, and the next group
-- goes on.
--
-- By hand (one call on one token bucket of 5 per 10 s, as assembled):
--   redis-cli --eval limiter-runtime/scripts/assembled/groups.lua rate_limit:demo , "" 1 4 10000000 5 5 1 "" 1

--> part clock

-- A limit's shape from ARGV[a + 1]: {code, window, max, depth, first block us, longest block us, kept}.
local shapes = {}
for i = 1, tonumber(ARGV[2]) do
  local a = 2 + (i - 1) * 4
  local depth, first, cap = ARGV[a + 4], nil, nil
  if string.find(depth, '|', 1, true) then depth, first, cap = string.match(depth, '^([^|]*)|(%d+)|(%d+)$') end
  local max_kept = ARGV[a + 3]
  --> part max
  shapes[i] = {tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), max, depth, tonumber(first), tonumber(cap), kept}
end

-- A limit's state as the group answers it: its block (under a penalty), first, second, and notes.
local function answer(block, first, second, notes)
  local text = string.format('%d', first)
  if type(second) == 'number' then
    text = text .. ',' .. string.format('%d', second)
  elseif second then
    text = text .. ',' .. second
  end
  if notes then text = text .. ',' .. table.concat(notes, ',') end
  if block then text = block .. '|' .. text end
  return text
end

-- Decides the `calls` calls of the group whose limits' keys follow KEYS[k] and whose shapes are `group`,
-- from ARGV[c]. Returns its answer.
local function decide(k, group, c, calls)
  -- Where the block key of each limit under a penalty is in KEYS, after the limits' keys (KEYS[nil] is nil).
  local blocks, b = {}, k + #group
  for i = 1, #group do
    if group[i][5] then
      b = b + 1
      blocks[i] = b
    end
  end
  if #group == 1 then
    local shape, cost_at = group[1], 1
    local key, code, window, max, depth = KEYS[k + 1], math.abs(shape[1]), shape[2], shape[3], shape[4]
    local block_key, block_first, cap, kept = KEYS[blocks[1]], shape[5], shape[6], shape[7]
    local answered
    --> each read: part one_group
    return answered
  end
  local answers = {}
  for call = 1, calls do
    local nonce, admitted, fitted = ARGV[c], true, {}
    for i = 1, #group do
      local shape, cost_at = group[i], i
      local key, code, window, max, depth = KEYS[k + i], math.abs(shape[1]), shape[2], shape[3], shape[4]
      local block_key, block_first, cap, kept = KEYS[blocks[i]], shape[5], shape[6], shape[7]
      local ok, answered = false, nil
      --> each read: part check
      fitted[i] = ok
      if not ok and shape[1] > 0 then admitted = false end
      answers[#answers + 1] = answered
    end
    if admitted then
      for i = 1, #group do
        if fitted[i] then
          local shape, cost = group[i], tonumber(ARGV[c + i])
          local key, code, window, max, depth = KEYS[k + i], math.abs(shape[1]), shape[2], shape[3], shape[4]
          local kept = shape[7]
          --> each take: part charge
        end
      end
    end
    c = c + 1 + #group
  end
  return table.concat(answers, ';')
end

local reply, k, a = {now}, 0, 3 + 4 * tonumber(ARGV[2])
while a <= #ARGV do
  local head = ARGV[a]
  local group, calls = {shapes[tonumber(head)]}, 1
  if not group[1] then
    local indices, many = string.match(head, '^([%d,]+)/?(%d*)$')
    group = {}
    for index in string.gmatch(indices, '%d+') do group[#group + 1] = shapes[tonumber(index)] end
    calls = tonumber(many) or 1
  end
  local decided, answered = pcall(decide, k, group, a + 1, calls)
  if decided then
    reply[#reply + 1] = answered
  else
    if type(answered) == 'table' then answered = answered.err end
    reply[#reply + 1] = '!' .. tostring(answered)
  end
  k = k + #group
  for i = 1, #group do
    if group[i][5] then k = k + 1 end
  end
  a = a + 1 + calls * (1 + #group)
end
return reply
