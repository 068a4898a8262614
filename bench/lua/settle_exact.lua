-- The settle half (see reserve_exact.lua): settle reservation ARGV[1] at
-- the actual cost ARGV[2]. KEYS as the reserve script's; ARGV[3] the
-- window_ms, ARGV[4] now_ms (optional). Answers 1 when this call settled
-- it, 0 when it had been settled before; an error for an expired or an
-- unknown id. A smaller cost gives the difference back to the window the
-- estimate was charged in while it is the current one; a larger cost
-- charges the current window, past its limit if need be.
local id, actual, w = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = tonumber(ARGV[4])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000 + math.floor(t[2] / 1000)
end
local deadline, seq = string.match(id, '^(%d+)-(%d+)$')
if not deadline then return redis.error_reply('ERR invalid reservation id') end
local rec = redis.call('HGET', KEYS[2], id)
if tonumber(deadline) < now then
  if rec then redis.call('HDEL', KEYS[2], id) end
  return redis.error_reply('ERR reservation expired')
end
if not rec then
  if tonumber(seq) > (tonumber(redis.call('HGET', KEYS[2], 'seq')) or 0) then
    return redis.error_reply('ERR reservation was never issued')
  end
  return 0
end
redis.call('HDEL', KEYS[2], id)
local est, charged = string.match(rec, '^(%d+):(%d+)$')
local diff = actual - tonumber(est)
local win = now - now % w
local cur = redis.call('HMGET', KEYS[1], 'win', 'used')
local used = 0
if tonumber(cur[1]) == win then used = tonumber(cur[2]) end
if diff < 0 then
  if tonumber(charged) ~= win then return 1 end
  used = math.max(0, used + diff)
else
  used = used + diff
end
redis.call('HSET', KEYS[1], 'win', win, 'used', used)
redis.call('PEXPIRE', KEYS[1], win + w - now)
return 1
