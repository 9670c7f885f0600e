-- Whether one limit of a call of several fits it (`ok`), reading its state (`answered`), charging nothing: its
-- write keeps what its read cleared (the sliding log's members that left, and their units), what an
-- upstream's pause moved (an algorithm that waits it out: algorithms/README.md, `pause`), and the block its
-- refusal may start.
local cost = tonumber(ARGV[c + cost_at])
--> part block
--> read
if paused and paused > now then
  --> pause
end
local notes
if not (block_ends and block_ends > now) then
  --> fits
  ok = fits
  if not fits then
    --> refused
    --> part offence
  end
end
--> write
-- A key that held another algorithm's state, dropped, answers -1 (see one_limit.lua).
if afresh then first = -1 end
answered = answer(block, first, second, notes)
