// ioredis's Cluster against a limitdb in emulated cluster mode, started by
// tests/cluster_test.go (LIMITDB_PORT) with a frozen clock and the
// policies api (5 a minute) and login (2 a minute).
// Run: node --test cluster.test.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';

const port = Number(process.env.LIMITDB_PORT);
assert.ok(port > 0, 'LIMITDB_PORT is not set');

const cluster = new Redis.Cluster([{ host: '127.0.0.1', port }], { redisOptions: { maxRetriesPerRequest: 0 } });
after(() => cluster.quit());

test('discovers one node owning every slot', async () => {
  const slots = await cluster.cluster('SLOTS');
  assert.equal(slots.length, 1);
  assert.deepEqual(slots[0].slice(0, 2), [0, 16383]);
  assert.equal(cluster.nodes('master').length, 1);
});

test('limiters and strings on keys across slots', async () => {
  for (let i = 0; i < 100; i++) {
    const key = `io:user:${i}`;
    assert.deepEqual(await cluster.call('CL.THROTTLE', key, 1, 2, 60), [0, 2, 1, -1, 30]);
    assert.deepEqual(await cluster.call('RL.HIT', 'api', key), [0, 5, 4, -1, 12000]);
    assert.equal(await cluster.set(`io:v:${i}`, String(i)), 'OK');
    assert.equal(await cluster.get(`io:v:${i}`), String(i));
  }
});

test('RL.HITALL on hash-tagged keys', async () => {
  for (const want of [0, 0, 1]) {
    const reply = await cluster.call('RL.HITALL', 2, 'api', '{io:42}:api', 'login', '{io:42}:login');
    assert.equal(reply[0], want);
  }
});

test('CROSSSLOT', async () => {
  await assert.rejects(cluster.call('RL.HITALL', 2, 'api', 'io:a', 'api', 'io:b'), /CROSSSLOT/);
});
