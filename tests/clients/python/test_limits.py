"""The `limits` library (Debian python3-limits 2.8.0) run unchanged against
redis-server (REDIS_SOCKET) and limitdb (LIMITDB_PORT), both on the real
clock, started by TestPythonLimits in tests/ratelibs_test.go.

Its RedisStorage serves three strategies:
- fixed window: EVALSHA of incr_expire.lua (INCRBY, EXPIRE on the first
  hit), GET, TTL, DEL;
- fixed window with elastic expiry: INCRBY and EXPIRE on every hit, no Lua;
- moving window: acquire_moving_window.lua (LINDEX, LPUSH, LTRIM, EXPIRE)
  and moving_window.lua (LRANGE), on a list of hit timestamps.
storage.reset() runs KEYS in a script, which limitdb refuses; the tests pin
that failure.
Run: REDIS_SOCKET=... LIMITDB_PORT=... python3 -m unittest -v test_limits
"""

import math
import os
import time
import unittest

import limits
import redis
from limits import RateLimitItemPerMinute, strategies

REDIS = "redis+unix://" + os.environ["REDIS_SOCKET"]
LIMITDB = "redis://127.0.0.1:%d" % int(os.environ["LIMITDB_PORT"])


def traffic(uri, strategy, prefix):
    """The same requests through one strategy: what each call answered,
    durations in whole seconds from now."""
    storage = limits.storage.RedisStorage(uri)
    limiter = strategy(storage)
    item = RateLimitItemPerMinute(3)
    out = []

    def stats(key):
        reset, remaining = limiter.get_window_stats(item, prefix, key)
        # get_expiry answers int(TTL + time.time()): ceil undoes the truncation.
        return ("stats", key, math.ceil(reset - time.time()), remaining)

    for _ in range(5):
        out.append(("hit", "u1", limiter.hit(item, prefix, "u1")))
    out.append(("test", "u1", limiter.test(item, prefix, "u1")))
    out.append(stats("u1"))
    out.append(("hit cost 2", "u2", limiter.hit(item, prefix, "u2", cost=2)))
    out.append(("hit cost 2", "u2", limiter.hit(item, prefix, "u2", cost=2)))
    out.append(("hit cost 1", "u2", limiter.hit(item, prefix, "u2")))
    out.append(stats("u2"))
    out.append(("test", "u3", limiter.test(item, prefix, "u3")))
    out.append(stats("u3"))
    limiter.clear(item, prefix, "u1")
    out.append(stats("u1"))
    out.append(("hit", "u1", limiter.hit(item, prefix, "u1")))
    out.append(stats("u1"))
    # The keys it leaves: names, types and TTLs.
    c = storage.storage
    for k in sorted(c.keys(b"LIMITER/" + prefix.encode() + b"*")):
        out.append(("key", k, c.type(k), c.ttl(k)))
    return out


class TestLimits(unittest.TestCase):
    def same(self, strategy, prefix):
        on_redis = traffic(REDIS, strategy, prefix)
        on_limitdb = traffic(LIMITDB, strategy, prefix)
        self.assertEqual(on_redis, on_limitdb)
        return on_limitdb

    def test_fixed_window(self):
        got = self.same(strategies.FixedWindowRateLimiter, "fixed")
        self.assertEqual([r[2] for r in got[:5]], [True, True, True, False, False])
        self.assertEqual(got[6], ("stats", "u1", 60, 0))
        self.assertEqual(got[7:11], [("hit cost 2", "u2", True), ("hit cost 2", "u2", False),
                                     ("hit cost 1", "u2", False), ("stats", "u2", 60, 0)])
        self.assertEqual(got[12:16], [("stats", "u3", 0, 3), ("stats", "u1", 0, 3),
                                      ("hit", "u1", True), ("stats", "u1", 60, 2)])
        self.assertEqual(got[16:], [("key", b"LIMITER/fixed/u1/3/1/minute", b"string", 60),
                                    ("key", b"LIMITER/fixed/u2/3/1/minute", b"string", 60)])

    def test_fixed_window_elastic_expiry(self):
        got = self.same(strategies.FixedWindowElasticExpiryRateLimiter, "elastic")
        self.assertEqual([r[2] for r in got[:5]], [True, True, True, False, False])
        self.assertEqual(got[6], ("stats", "u1", 60, 0))

    def test_moving_window(self):
        # The window is a list of hit timestamps, newest first, trimmed to
        # the limit; the scripts' LINDEX, LPUSH, LTRIM, EXPIRE and LRANGE
        # answer alike.
        got = self.same(strategies.MovingWindowRateLimiter, "moving")
        self.assertEqual([r[2] for r in got[:5]], [True, True, True, False, False])
        self.assertEqual(got[6], ("stats", "u1", 60, 0))
        self.assertEqual(got[7:11], [("hit cost 2", "u2", True), ("hit cost 2", "u2", False),
                                     ("hit cost 1", "u2", True), ("stats", "u2", 60, 0)])
        self.assertEqual(got[16:], [("key", b"LIMITER/moving/u1/3/1/minute", b"list", 60),
                                    ("key", b"LIMITER/moving/u2/3/1/minute", b"list", 60)])

    def test_moving_window_list_is_the_same(self):
        # Beyond the strategy's answers: the list itself, hit for hit.
        item = RateLimitItemPerMinute(3)
        lists = []
        for uri in (REDIS, LIMITDB):
            storage = limits.storage.RedisStorage(uri)
            limiter = strategies.MovingWindowRateLimiter(storage)
            for cost in (1, 2, 1, 1):
                limiter.hit(item, "mlist", "u1", cost=cost)
            c = storage.storage
            key = "LIMITER/mlist/u1/3/1/minute"
            items = c.lrange(key, 0, -1)
            lists.append((len(items), len(set(items)), c.llen(key), c.type(key), c.ttl(key)))
        self.assertEqual(lists[0], lists[1])
        self.assertEqual(lists[1][:4], (3, 2, 3, b"list"))

    def test_reset_runs_keys_in_a_script(self):
        # storage.reset() runs clear_keys.lua: redis.call('keys', 'LIMITER*')
        # then DEL. KEYS reaches keys the script did not declare, which
        # limitdb refuses in a script; plain KEYS and DEL work.
        on_redis = limits.storage.RedisStorage(REDIS)
        on_redis.storage.set("LIMITER/reset", 1)
        self.assertGreaterEqual(on_redis.reset(), 1)
        on_limitdb = limits.storage.RedisStorage(LIMITDB)
        on_limitdb.storage.set("LIMITER/reset", 1)
        with self.assertRaisesRegex(redis.ResponseError,
                                    r"^limitdb runs 'keys' in a script only on the keys the script declares: it needs the whole keyspace script: [0-9a-f]{40}, on @user_script:1\.$"):
            on_limitdb.reset()
        self.assertEqual(on_limitdb.storage.keys("LIMITER/reset"), [b"LIMITER/reset"])


if __name__ == "__main__":
    unittest.main()
