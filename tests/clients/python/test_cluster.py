"""redis-py's RedisCluster against a limitdb in emulated cluster mode,
started by tests/cluster_test.go (LIMITDB_PORT) with a frozen clock and
the policies api (5 a minute) and login (2 a minute).

Run: LIMITDB_PORT=... python3 -m unittest -v test_cluster
"""

import os
import unittest

from redis.cluster import RedisCluster
from redis.exceptions import ClusterCrossSlotError, RedisClusterException

PORT = int(os.environ["LIMITDB_PORT"])


class RedisClusterTest(unittest.TestCase):
    def setUp(self):
        self.rc = RedisCluster(host="127.0.0.1", port=PORT, decode_responses=True)

    def tearDown(self):
        self.rc.close()

    def test_discovers_one_node_with_every_slot(self):
        nodes = self.rc.get_nodes()
        self.assertEqual(len(nodes), 1)
        self.assertEqual(nodes[0].port, PORT)
        self.assertEqual(self.rc.cluster_keyslot("{user:42}:api"), 15880)

    def test_limiters_and_strings_across_slots(self):
        for i in range(100):
            key = "py:user:%d" % i
            self.assertEqual(self.rc.execute_command("CL.THROTTLE", key, 1, 2, 60), [0, 2, 1, -1, 30])
            # RL.HIT routes by its key argument, COMMAND's first key 2.
            self.assertEqual(self.rc.execute_command("RL.HIT", "api", key), [0, 5, 4, -1, 12000])
            self.assertTrue(self.rc.set("py:v:%d" % i, i))
            self.assertEqual(self.rc.get("py:v:%d" % i), str(i))

    def test_hitall_on_hash_tagged_keys(self):
        # RL.HITALL is movablekeys: redis-py asks COMMAND GETKEYS.
        for want in (0, 0, 1):
            reply = self.rc.execute_command("RL.HITALL", 2, "api", "{py:42}:api", "login", "{py:42}:login")
            self.assertEqual(reply[0], want)

    def test_keyless_command_to_the_primaries(self):
        self.rc.execute_command("RL.POLICY", "SET", "py", "gcra", 3, "1m", target_nodes=RedisCluster.PRIMARIES)
        self.assertEqual(self.rc.execute_command("RL.HIT", "py", "py:k"), [0, 3, 2, -1, 20000])

    def test_crossslot(self):
        # redis-py finds RL.HITALL's keys with COMMAND GETKEYS and refuses
        # keys in several slots before sending; the server would answer
        # CROSSSLOT (a plain connection to the node shows it).
        with self.assertRaisesRegex(RedisClusterException, "all keys must map to the same key slot"):
            self.rc.execute_command("RL.HITALL", 2, "api", "py:a", "api", "py:b")
        node = self.rc.get_default_node().redis_connection
        with self.assertRaises(ClusterCrossSlotError):  # redis-py's class for -CROSSSLOT
            node.execute_command("RL.HITALL", 2, "api", "py:a", "api", "py:b")


if __name__ == "__main__":
    unittest.main()
