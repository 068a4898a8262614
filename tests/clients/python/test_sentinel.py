"""redis-py's Sentinel client against limitdb, run by tests/failover_test.go
beside a failover: real redis-sentinel processes (LIMITDB_SENTINELS) monitor
a primary behind a proxy at LIMITDB_PRIMARY_PORT, with replicas behind
LIMITDB_REPLICA_PORTS.

The test finds the primary through the sentinels and throttles on it, writes
ready in LIMITDB_STATE_DIR and waits for killed (the primary was killed),
then throttles until it reaches the promoted replica and writes its port in
done.
"""

import os
import pathlib
import time
import unittest

import redis
from redis.sentinel import Sentinel

SENTINELS = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in os.environ["LIMITDB_SENTINELS"].split(",")]
PRIMARY = int(os.environ["LIMITDB_PRIMARY_PORT"])
REPLICAS = {int(p) for p in os.environ["LIMITDB_REPLICA_PORTS"].split(",")}
STATE = pathlib.Path(os.environ["LIMITDB_STATE_DIR"])


def throttle_and_port(client):
    """CL.THROTTLE on the primary, and the port of the connection it went to."""
    reply = client.execute_command("CL.THROTTLE", "py:sentinel", 99, 100, 3600)
    pool = client.connection_pool
    conn = pool.get_connection("CL.THROTTLE")
    try:
        return reply, conn.port
    finally:
        pool.release(conn)


class SentinelFailover(unittest.TestCase):
    def test_reaches_the_new_primary(self):
        sentinel = Sentinel(SENTINELS, socket_timeout=0.5, socket_connect_timeout=0.5)
        self.assertEqual(sentinel.discover_master("mymaster"), ("127.0.0.1", PRIMARY))
        primary = sentinel.master_for("mymaster", socket_timeout=0.5, socket_connect_timeout=0.5)
        reply, port = throttle_and_port(primary)
        self.assertEqual(reply[0], 0)
        self.assertEqual(port, PRIMARY)
        (STATE / "ready").write_text("")

        deadline = time.monotonic() + 60
        while not (STATE / "killed").exists():
            self.assertLess(time.monotonic(), deadline, "never told the primary was killed")
            time.sleep(0.05)
        while True:
            self.assertLess(time.monotonic(), deadline, "never reached a new primary")
            try:
                reply, port = throttle_and_port(primary)
            except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
                time.sleep(0.1)
                continue
            self.assertEqual(reply[0], 0)
            self.assertIn(port, REPLICAS)
            (STATE / "done").write_text(str(port))
            return


if __name__ == "__main__":
    unittest.main()
