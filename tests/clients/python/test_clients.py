"""redis-py against a limitdb started by tests/clients_test.go (LIMITDB_PORT)
with a frozen clock, so every reply below is exact.

Debian's python3-redis (4.3) speaks RESP2 only.
Run: LIMITDB_PORT=... python3 -m unittest -v test_clients
"""

import os
import unittest

import redis

PORT = int(os.environ["LIMITDB_PORT"])

# Every limiter command on the server: label (the command, maybe with a
# variant) -> steps of (args, expected reply).
LIMITER_STEPS = {
    "CL.THROTTLE": [
        ((15, 30, 60), [0, 16, 15, -1, 2]),
        ((15, 30, 60, 0), [0, 16, 15, -1, 2]),  # peek
        ((15, 30, 60, 15), [0, 16, 0, -1, 32]),
        ((15, 30, 60), [1, 16, 0, 2, 32]),  # denied, not charged
        ((15, 30, 60, 17), [1, 16, 0, -1, 32]),  # can never fit
    ],
    "GCRA": [
        ((2, 1, 0.5), [0, 3, 2, -1, 1]),
        ((2, 1, 0.5, "TOKENS", 2), [0, 3, 0, -1, 2]),
        ((2, 1, 0.5), [1, 3, 0, 1, 2]),
    ],
    "TB.TAKE": [
        ((10, 1, "1s"), [0, 10, 9, -1, 1000]),
        ((10, 1, "1s", 9), [0, 10, 0, -1, 10000]),
        ((10, 1, "1s"), [1, 10, 0, 1000, 10000]),
        ((10, 1, "1s", 0), [0, 10, 0, -1, 10000]),
        ((10, 1, "1s", 11), [1, 10, 0, -1, 10000]),
    ],
    "LB.QUEUE": [  # the sixth field is the delay before the request may run
        ((3, 10, "1s"), [0, 3, 2, -1, 100, 0]),
        ((3, 10, "1s"), [0, 3, 1, -1, 200, 100]),
        ((3, 10, "1s"), [0, 3, 0, -1, 300, 200]),
        ((3, 10, "1s"), [1, 3, 0, 100, 300, -1]),
        ((3, 10, "1s", 0), [0, 3, 0, -1, 300, 300]),
    ],
    "FW.INCR": [  # the frozen clock sits on a whole second
        ((3, "1s"), [0, 3, 2, -1, 1000]),
        ((3, "1s", 2), [0, 3, 0, -1, 1000]),
        ((3, "1s"), [1, 3, 0, 1000, 1000]),
    ],
    "SW.INCR": [
        ((10, "1s", 10), [0, 10, 0, -1, 2000]),
        ((10, "1s"), [1, 10, 0, 1100, 2000]),
    ],
    "SW.INCR PRECISION": [  # sub-windows of 100 ms
        ((10, "1s", 10, "PRECISION", 10), [0, 10, 0, -1, 1100]),
    ],
    "SL.INCR": [
        ((3, "1s"), [0, 3, 2, -1, 1000]),
        ((3, "1s", 2), [0, 3, 0, -1, 1000]),
        ((3, "1s"), [1, 3, 0, 1000, 1000]),
        ((3, "1s", 4), [1, 3, 0, -1, 1000]),
    ],
}


class RedisPy(unittest.TestCase):
    def setUp(self):
        self.r = redis.Redis(host="127.0.0.1", port=PORT, decode_responses=True)
        self.addCleanup(self.r.close)

    def test_limiter_commands(self):
        for label, steps in LIMITER_STEPS.items():
            command, key = label.split()[0], "py:" + label
            for i, (args, want) in enumerate(steps):
                got = self.r.execute_command(command, key, *args)
                self.assertIsInstance(got, list, f"{command} step {i}")
                for v in got:
                    self.assertIsInstance(v, int, f"{command} step {i}: {got!r}")
                self.assertEqual(got, want, f"{command} step {i}")

    def test_policies(self):
        self.assertEqual(self.r.execute_command("RL.POLICY", "SET", "py-sec", "gcra", 10, "1s"), "OK")
        self.assertEqual(self.r.execute_command("RL.POLICY", "SET", "py-day", "gcra", 3, "1d"), "OK")
        self.assertEqual(self.r.execute_command("RL.HIT", "py-sec", "bob"), [0, 10, 9, -1, 100])
        self.assertEqual(self.r.execute_command("RL.HIT", "py-sec", "bob", 9), [0, 10, 0, -1, 1000])
        self.assertEqual(self.r.execute_command("RL.HIT", "py-sec", "bob"), [1, 10, 0, 100, 1000])
        # All or nothing: [limited, reply per pair]; a denial charges no pair.
        hitall = ("RL.HITALL", 2, "py-sec", "ann", "py-day", "ann")
        self.assertEqual(
            self.r.execute_command(*hitall, "COST", 3),
            [0, [0, 10, 7, -1, 300], [0, 3, 0, -1, 86400000]],
        )
        self.assertEqual(
            self.r.execute_command(*hitall),
            [1, [0, 10, 7, -1, 300], [1, 3, 0, 28800000, 86400000]],
        )

    def test_pipeline(self):
        p = self.r.pipeline(transaction=False)
        for _ in range(3):
            p.execute_command("CL.THROTTLE", "py:pipe", 1, 1, 60)
        self.assertEqual(
            p.execute(),
            [[0, 2, 1, -1, 60], [0, 2, 0, -1, 120], [1, 2, 0, 60, 120]],
        )

    def test_errors_keep_the_connection(self):
        with self.assertRaisesRegex(redis.ResponseError, "count must be at least 1"):
            self.r.execute_command("CL.THROTTLE", "k", 1, 0, 60)
        with self.assertRaisesRegex(redis.ResponseError, "unknown command"):
            self.r.execute_command("NOSUCH")
        self.assertTrue(self.r.ping())

    def test_strings_and_counters(self):
        self.assertTrue(self.r.set("py:n", 10, ex=100, nx=True))
        self.assertEqual(self.r.incrby("py:n", 5), 15)
        self.assertEqual(self.r.get("py:n"), "15")
        self.assertEqual(self.r.pttl("py:n"), 100000)
        self.assertIsNone(self.r.set("py:n", 1, nx=True))
        self.r.execute_command("CL.THROTTLE", "py:gcra", 1, 1, 1)
        with self.assertRaisesRegex(redis.ResponseError, "WRONGTYPE"):
            self.r.incr("py:gcra")


if __name__ == "__main__":
    unittest.main()
