-- Sliding log as a Redis Lua script over a sorted set (one member per
-- admitted request, scored by its time): the exact sliding window most
-- libraries ship. KEYS[1] = key; ARGV = limit, window (s). Replies
-- {limited, limit, remaining, retry_after, reset_after} in milliseconds.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000000

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  -- the count makes the member unique even within one microsecond
  redis.call('ZADD', KEYS[1], now, now .. ':' .. n)
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
  return {0, limit, limit - n - 1, -1, math.ceil(window / 1000)}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local retry = math.ceil((tonumber(oldest[2]) + window - now) / 1000)
return {1, limit, 0, retry, retry}
