// ioredis' Sentinel support against limitdb, run by tests/failover_test.go
// beside a failover: real redis-sentinel processes (LIMITDB_SENTINELS)
// monitor a primary behind a proxy at LIMITDB_PRIMARY_PORT, with replicas
// behind LIMITDB_REPLICA_PORTS.
//
// The test finds the primary through the sentinels and throttles on it,
// writes ready in LIMITDB_STATE_DIR and waits for killed (the primary was
// killed), then throttles, on the same client, until it reaches the
// promoted replica and writes its port in done.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';

const sentinels = process.env.LIMITDB_SENTINELS.split(',').map((a) => {
  const i = a.lastIndexOf(':');
  return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
});
const primaryPort = Number(process.env.LIMITDB_PRIMARY_PORT);
const replicaPorts = process.env.LIMITDB_REPLICA_PORTS.split(',').map(Number);
const state = process.env.LIMITDB_STATE_DIR;

test('ioredis reaches the new primary through the sentinels', async () => {
  const client = new Redis({
    sentinels,
    name: 'mymaster',
    connectTimeout: 500,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 100,
    sentinelRetryStrategy: () => 100,
  });
  try {
    const first = await client.call('CL.THROTTLE', 'io:sentinel', '99', '100', '3600');
    assert.equal(first[0], 0);
    assert.equal(client.stream.remotePort, primaryPort);
    writeFileSync(join(state, 'ready'), '');

    const deadline = Date.now() + 60_000;
    while (!existsSync(join(state, 'killed'))) {
      assert.ok(Date.now() < deadline, 'never told the primary was killed');
      await sleep(50);
    }
    for (;;) {
      assert.ok(Date.now() < deadline, 'never reached a new primary');
      let reply;
      try {
        reply = await client.call('CL.THROTTLE', 'io:sentinel', '99', '100', '3600');
      } catch {
        await sleep(100);
        continue;
      }
      assert.equal(reply[0], 0);
      assert.ok(replicaPorts.includes(client.stream.remotePort), `reached port ${client.stream.remotePort}`);
      writeFileSync(join(state, 'done'), String(client.stream.remotePort));
      return;
    }
  } finally {
    client.disconnect();
  }
});
