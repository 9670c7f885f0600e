-- Gives back charges, each at most `units` of what one admission charged, never more, nothing once it has
-- left its limit: assembled at build time (see build.rs) from each algorithm's `give_back`.
--
--   KEYS[i]  the key of the limit of charge i
--   ARGV[1]  "" (now from Redis's TIME); tests pass "<now us> <minimum TTL ms>"
--   then, for each charge (7 arguments): the algorithm's code (as groups.lua numbers them), window us, max,
--   units to give back, the call's cost, when it was charged (us), and its mark: its nonce (the sliding log,
--   in flight), the window's index (the windows), the period's end (calendar), its receipt (the buckets: the
--   queue as the charge left it, "<t>:<f>:<s>:<g>")
--
-- Returns {now}.

--> part clock
for i = 1, #KEYS do
  local a = 1 + (i - 1) * 7
  local key, code, window, max = KEYS[i], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local units, cost, at, mark = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), ARGV[a + 7]
  repeat
    --> each give_back: give_back
  until true
end
return {now}
