-- The windows' count (after fixed_window.lua or calendar.lua, which find the window "now" is in): runs the
-- calls on the count of the window (`period`, what the hash's w holds, ending at `ends` us; `open` when the
-- stored count is that window's, `state` the hash's w and n), writes it (the expiry set once, when the
-- window opens), and answers what the client's twin replays the calls from: now, when the window held
-- nothing before the first call; else {now, its count}.
local first = 0
if open then first = tonumber(state[2]) end
local count = first
-- No cost at all is one call of cost 1.
for c = 3, #ARGV > 2 and #ARGV or 3 do
  local cost = 1
  if ARGV[c] then cost = tonumber(ARGV[c]) end
  if count + cost <= max then count = count + cost end
end
if count > first then
  if open then
    redis.call('HINCRBY', key, 'n', count - first)
  else
    redis.call('HSET', key, 'w', period, 'n', count)
    local ttl = math.ceil((ends - now) / 1000)
    if ttl < min_ttl then ttl = min_ttl end
    redis.call('PEXPIRE', key, ttl)
  end
end
if first == 0 then return now end
return {now, first}
