-- A lease on a limit of this algorithm: what an earlier lease left given back, then the units taken.
if ARGV[8] then
  local units, cost, at, mark = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11]
  repeat
    --> give_back
  until true
end
--> read
local room
--> room
local taken = math.min(want, room)
if taken < cost then
  taken = 0
else
  cost = taken
  --> take
end
-- What was taken, or what the read carried over to changed terms.
--> write
return {now, taken, first, second or ''}
