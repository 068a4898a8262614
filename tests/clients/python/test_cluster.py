"""redis-py's RedisCluster against limitdb, in one of two shapes:

- LIMITDB_PRIMARIES=1 (the default): one node in emulated cluster mode with
  a frozen clock, started by TestClusterRedisPy in tests/cluster_test.go;
- LIMITDB_PRIMARIES=3: six processes made three primaries with a replica
  each by redis-cli --cluster create, started by TestClusterNodesRedisPy
  in tests/cluster_clients_test.go.

Either way LIMITDB_PORT is one node's port and every primary has the
policies api (5 a minute) and login (2 a minute). Every key the tests write
starts with a prefix of its own run: on the real cluster the clock runs,
and a fresh key answers as it does under the frozen clock only while it is
fresh.

Run: LIMITDB_PORT=... [LIMITDB_PRIMARIES=3] python3 -m unittest -v test_cluster
"""

import os
import time
import unittest
import uuid

from redis.cluster import RedisCluster
from redis.exceptions import ClusterCrossSlotError, RedisClusterException

PORT = int(os.environ["LIMITDB_PORT"])
PRIMARIES = int(os.environ.get("LIMITDB_PRIMARIES", "1"))
RUN = uuid.uuid4().hex[:8]
SLOTS = 16384


def get_calls(node):
    """The GETs a node has served, from its INFO commandstats."""
    stats = node.redis_connection.info("commandstats")
    return stats.get("cmdstat_get", {}).get("calls", 0)


class RedisClusterTest(unittest.TestCase):
    def setUp(self):
        self.rc = RedisCluster(host="127.0.0.1", port=PORT, decode_responses=True)

    def tearDown(self):
        self.rc.close()

    @unittest.skipUnless(PRIMARIES == 1, "a cluster of several primaries")
    def test_discovers_one_node_with_every_slot(self):
        nodes = self.rc.get_nodes()
        self.assertEqual(len(nodes), 1)
        self.assertEqual(nodes[0].port, PORT)
        self.assertEqual(self.rc.cluster_keyslot("{user:42}:api"), 15880)

    @unittest.skipIf(PRIMARIES == 1, "one emulated node")
    def test_discovers_the_primaries_their_replicas_and_every_slot(self):
        primaries = {n.name for n in self.rc.get_primaries()}
        self.assertEqual(len(primaries), PRIMARIES, primaries)
        # redis-cli --cluster create --cluster-replicas 1: one replica each.
        self.assertEqual(len(self.rc.get_replicas()), PRIMARIES)
        ranges = sorted(self.rc.cluster_slots().items())
        self.assertEqual(ranges[0][0][0], 0, ranges)
        self.assertEqual(ranges[-1][0][1], SLOTS - 1, ranges)
        for ((_, end), _), ((start, _), _) in zip(ranges, ranges[1:]):
            self.assertEqual(start, end + 1, "a gap or an overlap in CLUSTER SLOTS: %s" % ranges)
        owners = {"%s:%d" % tuple(r["primary"]) for _, r in ranges}
        self.assertEqual(owners, primaries)
        # The client's own table routes every slot to a primary with a replica.
        for slot in range(SLOTS):
            self.assertIn(self.rc.nodes_manager.get_node_from_slot(slot).name, primaries, slot)
            self.assertEqual(len(self.rc.nodes_manager.slots_cache[slot]), 2, slot)

    def test_limiters_and_strings_across_slots(self):
        served = set()
        for i in range(100):
            key = "%s:py:user:%d" % (RUN, i)
            self.assertEqual(self.rc.execute_command("CL.THROTTLE", key, 1, 2, 60), [0, 2, 1, -1, 30])
            # RL.HIT routes by its key argument, COMMAND's first key 2.
            self.assertEqual(self.rc.execute_command("RL.HIT", "api", key), [0, 5, 4, -1, 12000])
            v = "%s:py:v:%d" % (RUN, i)
            self.assertTrue(self.rc.set(v, i))
            self.assertEqual(self.rc.get(v), str(i))
            # The primary the client routes the key to holds it: asked
            # directly, a node that does not own the slot answers MOVED.
            owner = self.rc.get_node_from_key(v)
            self.assertEqual(owner.redis_connection.get(v), str(i), owner.name)
            served.add(owner.name)
        self.assertEqual(len(served), PRIMARIES, "100 keys should spread over every primary: %s" % served)

    def test_hitall_on_hash_tagged_keys(self):
        # RL.HITALL is movablekeys: redis-py asks COMMAND GETKEYS.
        tag = "{%s:py:42}" % RUN
        for want in (0, 0, 1):
            reply = self.rc.execute_command("RL.HITALL", 2, "api", tag + ":api", "login", tag + ":login")
            self.assertEqual(reply[0], want)

    def test_keyless_command_to_the_primaries(self):
        replies = self.rc.execute_command("RL.POLICY", "SET", "py", "gcra", 3, "1m", target_nodes=RedisCluster.PRIMARIES)
        # One primary's reply comes back bare, several as a dict by node.
        if PRIMARIES > 1:
            self.assertEqual(len(replies), PRIMARIES, replies)
        # Every primary knows the policy: keys on each of them use it.
        served = set()
        for i in range(30):
            key = "%s:py:k:%d" % (RUN, i)
            self.assertEqual(self.rc.execute_command("RL.HIT", "py", key), [0, 3, 2, -1, 20000], key)
            served.add(self.rc.get_node_from_key(key).name)
        self.assertEqual(len(served), PRIMARIES, served)

    def test_crossslot(self):
        # redis-py finds RL.HITALL's keys with COMMAND GETKEYS and refuses
        # keys in several slots before sending; the server would answer
        # CROSSSLOT (a plain connection to the node shows it), before
        # MOVED, whichever primary it is.
        with self.assertRaisesRegex(RedisClusterException, "all keys must map to the same key slot"):
            self.rc.execute_command("RL.HITALL", 2, "api", "py:a", "api", "py:b")
        node = self.rc.get_default_node().redis_connection
        with self.assertRaises(ClusterCrossSlotError):  # redis-py's class for -CROSSSLOT
            node.execute_command("RL.HITALL", 2, "api", "py:a", "api", "py:b")

    @unittest.skipIf(PRIMARIES == 1, "one emulated node has no replicas")
    def test_read_from_replicas(self):
        key = "%s:py:ro" % RUN
        self.assertTrue(self.rc.set(key, "v"))
        reader = RedisCluster(host="127.0.0.1", port=PORT, decode_responses=True, read_from_replicas=True)
        try:
            replica = reader.get_node_from_key(key, replica=True)
            self.assertIsNotNone(replica, "the key's slot has no replica")
            before = get_calls(replica)
            # redis-py sends READONLY to replicas and takes a slot's reads in
            # turn from its primary and its replica: two reads in a row that
            # see the value include one the replica served, once it has
            # received the write.
            deadline, seen = time.monotonic() + 5, 0
            while seen < 2:
                if reader.get(key) == "v":
                    seen += 1
                    continue
                seen = 0
                self.assertLess(time.monotonic(), deadline, "replica %s never had %s" % (replica.name, key))
                time.sleep(0.05)
            self.assertGreater(get_calls(replica), before, "replica %s served no GET" % replica.name)
        finally:
            reader.close()


if __name__ == "__main__":
    unittest.main()
