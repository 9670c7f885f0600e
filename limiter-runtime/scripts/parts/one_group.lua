-- The calls of a group of one limit: as one_limit.lua decides them, each refused while the key is blocked
-- (but by an upstream's pause its algorithm waits out: algorithms/README.md, `pause`).
--> part block
--> read
if paused and paused > now then
  --> pause
end
local notes
for _ = 1, calls do
  local nonce, cost = ARGV[c], tonumber(ARGV[c + 1])
  c = c + 2
  if not (block_ends and block_ends > now) then
    --> fits
    if fits then
      --> take
    else
      --> refused
      --> part offence
    end
  end
end
--> write
-- A key that held another algorithm's state, dropped, answers -1 (see one_limit.lua).
if afresh then first = -1 end
answered = answer(block, first, second, notes)
