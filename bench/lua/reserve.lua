-- The reserve half of reserve-then-correct as a team writes it on Redis
-- instead of RL.RESERVE and RL.SETTLE (docs/algorithms.md): charge the
-- estimate ARGV[1] on a fixed-window counter KEYS[1] of limit ARGV[2] and
-- window ARGV[3] ms, taking it back when it would pass the limit. The
-- correction is a DECRBY by estimate - actual afterwards.
local used = redis.call('INCRBY', KEYS[1], ARGV[1])
if used == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
if used > tonumber(ARGV[2]) then
  redis.call('DECRBY', KEYS[1], ARGV[1])
  return 0
end
return 1
