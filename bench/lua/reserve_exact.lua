-- The reserve half of reserve-then-settle written on Redis with the same
-- guarantees as RL.RESERVE on a fixed_window policy (docs/algorithms.md):
-- an id per reservation, a settle that counts once, a give-back only to
-- the window the estimate was charged in, a settle after the ttl refused.
-- KEYS[1]: the window counter (a hash: win, used); KEYS[2]: the open
-- reservations (a hash: seq, and id -> "cost:window").
-- ARGV: cost, limit, window_ms, ttl_ms [, now_ms]. Answers the id, or
-- false when the cost would pass the limit (nothing is charged).
local cost, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local w, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = tonumber(ARGV[5])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000 + math.floor(t[2] / 1000)
end
local win = now - now % w
local cur = redis.call('HMGET', KEYS[1], 'win', 'used')
local used = 0
if tonumber(cur[1]) == win then used = tonumber(cur[2]) end
if used + cost > limit then return false end
redis.call('HSET', KEYS[1], 'win', win, 'used', used + cost)
redis.call('PEXPIRE', KEYS[1], win + w - now)
local id = (now + ttl) .. '-' .. redis.call('HINCRBY', KEYS[2], 'seq', 1)
redis.call('HSET', KEYS[2], id, cost .. ':' .. win)
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return id
