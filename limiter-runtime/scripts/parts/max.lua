-- A limit's `max`, and `kept`, the units its calls must leave free for the priorities above their own
-- (src/priority.rs; 0 for most calls): from the argument `max_kept`, "<max>" or "<max>/<kept>".
local max, kept = tonumber(max_kept), 0
if not max then
  max, kept = string.match(max_kept, '^(%d+)/(%d+)$')
  max, kept = tonumber(max), tonumber(kept)
end
