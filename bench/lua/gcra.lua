-- GCRA as a Redis Lua script: the usual way to get CL.THROTTLE's answer
-- without a module. KEYS[1] = key; ARGV = max_burst, count, period (s),
-- [quantity]. Replies like CL.THROTTLE: {limited, limit, remaining,
-- retry_after, reset_after} in seconds. State is the theoretical arrival
-- time (TAT) in microseconds, stored as a string with an expiry.
local burst = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local quantity = tonumber(ARGV[4] or '1')

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = period * 1000000 / count
local tolerance = interval * (burst + 1)

local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new_tat = tat + interval * quantity
local diff = now - (new_tat - tolerance)

local limited, retry, ttl = 0, -1, 0
if diff < 0 then
  limited = 1
  if interval * quantity <= tolerance then retry = math.ceil(-diff / 1000000) end
  ttl = tat - now
else
  ttl = new_tat - now
  if quantity > 0 then
    redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil(ttl / 1000))
  end
end
local remaining = math.floor((tolerance - ttl) / interval)
if remaining < 0 then remaining = 0 end
return {limited, burst + 1, remaining, retry, math.ceil(ttl / 1000000)}
