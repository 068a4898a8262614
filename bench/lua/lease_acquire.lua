-- A semaphore of leases on a sorted set, as teams write it by hand (the
-- pattern redis-semaphore ships): one member per holder, scored by the
-- instant it acquired. KEYS[1] = key; ARGV = limit, identifier, ttl (ms),
-- now (ms, the caller's clock). Replies 1 when acquired, 0 when full.
-- Release is ZREM key identifier.
--
-- Every acquire reclaims the members older than now - ttl with ITS OWN
-- ttl and now, and sets the whole key's expiry to its own ttl: the races
-- docs/algorithms.md lists (tests/leases_test.go makes them happen).
local limit = tonumber(ARGV[1])
local ttl = tonumber(ARGV[3])
local now = tonumber(ARGV[4])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ttl)
  return 1
end
return 0
