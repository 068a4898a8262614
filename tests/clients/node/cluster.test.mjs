// ioredis's Cluster against limitdb, in one of two shapes:
// - LIMITDB_PRIMARIES=1 (the default): one node in emulated cluster mode
//   with a frozen clock, started by TestClusterIORedis in
//   tests/cluster_test.go;
// - LIMITDB_PRIMARIES=3: six processes made three primaries with a replica
//   each by redis-cli --cluster create, started by TestClusterNodesIORedis
//   in tests/cluster_clients_test.go.
// Either way LIMITDB_PORT is one node's port and every primary has the
// policies api (5 a minute) and login (2 a minute). Every key the tests
// write starts with a prefix of its own run: on the real cluster the clock
// runs, and a fresh key answers as it does under the frozen clock only
// while it is fresh.
// Run: LIMITDB_PORT=... [LIMITDB_PRIMARIES=3] node --test cluster.test.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';

const port = Number(process.env.LIMITDB_PORT);
assert.ok(port > 0, 'LIMITDB_PORT is not set');
const primaries = Number(process.env.LIMITDB_PRIMARIES ?? 1);
const run = randomBytes(4).toString('hex');
const SLOTS = 16384;

const options = { redisOptions: { maxRetriesPerRequest: 0 } };
const cluster = new Redis.Cluster([{ host: '127.0.0.1', port }], options);
after(() => cluster.quit());

async function ready(c) {
  if (c.status !== 'ready') await once(c, 'ready');
}

// owner is the primary ioredis routes key's slot to, as a connection of its own.
async function owner(c, key) {
  const slot = await c.cluster('KEYSLOT', key);
  const addr = c.slots[slot][0];
  const node = c.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === addr);
  assert.ok(node, `no primary ${addr} for slot ${slot}`);
  return { addr, node };
}

// getCalls is the GETs a node has served, from its INFO commandstats.
async function getCalls(node) {
  const m = /cmdstat_get:calls=(\d+)/.exec(await node.info('commandstats'));
  return m ? Number(m[1]) : 0;
}

test('discovers one node owning every slot', { skip: primaries !== 1 && 'a cluster of several primaries' }, async () => {
  const slots = await cluster.cluster('SLOTS');
  assert.equal(slots.length, 1);
  assert.deepEqual(slots[0].slice(0, 2), [0, 16383]);
  assert.equal(cluster.nodes('master').length, 1);
});

test('discovers the primaries, their replicas and every slot', { skip: primaries === 1 && 'one emulated node' }, async () => {
  await ready(cluster);
  assert.equal(cluster.nodes('master').length, primaries);
  // redis-cli --cluster create --cluster-replicas 1: one replica each.
  assert.equal(cluster.nodes('slave').length, primaries);
  const ranges = (await cluster.cluster('SLOTS')).map(([start, end]) => [start, end]).sort((a, b) => a[0] - b[0]);
  assert.equal(ranges.length, primaries, JSON.stringify(ranges));
  assert.equal(ranges[0][0], 0);
  assert.equal(ranges.at(-1)[1], SLOTS - 1);
  for (let i = 1; i < ranges.length; i++) {
    assert.equal(ranges[i][0], ranges[i - 1][1] + 1, `a gap or an overlap in CLUSTER SLOTS: ${JSON.stringify(ranges)}`);
  }
  // The client's own table routes every slot to a primary and its replica.
  const masters = new Set(cluster.nodes('master').map((n) => `${n.options.host}:${n.options.port}`));
  for (let slot = 0; slot < SLOTS; slot++) {
    assert.equal(cluster.slots[slot]?.length, 2, `slot ${slot}`);
    assert.ok(masters.has(cluster.slots[slot][0]), `slot ${slot}: ${cluster.slots[slot]}`);
  }
});

test('limiters and strings on keys across slots', async () => {
  const served = new Set();
  for (let i = 0; i < 100; i++) {
    const key = `${run}:io:user:${i}`;
    assert.deepEqual(await cluster.call('CL.THROTTLE', key, 1, 2, 60), [0, 2, 1, -1, 30]);
    assert.deepEqual(await cluster.call('RL.HIT', 'api', key), [0, 5, 4, -1, 12000]);
    const v = `${run}:io:v:${i}`;
    assert.equal(await cluster.set(v, String(i)), 'OK');
    assert.equal(await cluster.get(v), String(i));
    // The primary ioredis routes the key to holds it: asked directly, a
    // node that does not own the slot answers MOVED.
    const { addr, node } = await owner(cluster, v);
    assert.equal(await node.get(v), String(i), addr);
    served.add(addr);
  }
  assert.equal(served.size, primaries, `100 keys should spread over every primary: ${[...served]}`);
});

test('RL.HITALL on hash-tagged keys', async () => {
  const tag = `{${run}:io:42}`;
  for (const want of [0, 0, 1]) {
    const reply = await cluster.call('RL.HITALL', 2, 'api', `${tag}:api`, 'login', `${tag}:login`);
    assert.equal(reply[0], want);
  }
});

test('a keyless RL.POLICY on every primary', async () => {
  // ioredis sends a command without keys to one node: a policy goes to
  // each primary by hand, and replicas receive it in replication.
  await ready(cluster);
  const replies = await Promise.all(cluster.nodes('master').map((n) => n.call('RL.POLICY', 'SET', 'io', 'gcra', 3, '1m')));
  assert.deepEqual(replies, Array(primaries).fill('OK'));
  const served = new Set();
  for (let i = 0; i < 30; i++) {
    const key = `${run}:io:k:${i}`;
    assert.deepEqual(await cluster.call('RL.HIT', 'io', key), [0, 3, 2, -1, 20000], key);
    served.add((await owner(cluster, key)).addr);
  }
  assert.equal(served.size, primaries, [...served].join(' '));
});

// limiterCall sends a command ioredis's table does not know (a limiter)
// with its key named, so that ioredis routes it by the key's slot as it
// routes its own commands, instead of to a random primary that answers
// MOVED (docs/cluster.md, "How each client connects").
async function limiterCall(c, name, key, ...rest) {
  const cmd = new Redis.Command(name, [key, ...rest], { replyEncoding: 'utf8' });
  cmd.keys = [key];
  c.sendCommand(cmd);
  return cmd.promise;
}

// rejected sums the limiter calls the primaries refused (MOVED included).
async function rejected(c, name) {
  const re = new RegExp(`cmdstat_${name.toLowerCase().replace('.', '\\.')}:[^\r]*rejected_calls=(\\d+)`);
  const infos = await Promise.all(c.nodes('master').map((n) => n.info('commandstats')));
  return infos.reduce((sum, info) => sum + Number(re.exec(info)?.[1] ?? 0), 0);
}

test('a limiter command routed by its key, with no MOVED', async () => {
  await ready(cluster);
  const before = await rejected(cluster, 'CL.THROTTLE');
  for (let i = 0; i < 60; i++) {
    const key = `${run}:io:routed:${i}`;
    assert.deepEqual(await limiterCall(cluster, 'CL.THROTTLE', key, 1, 2, 60), [0, 2, 1, -1, 30], key);
  }
  assert.equal(await rejected(cluster, 'CL.THROTTLE'), before, 'no call was sent to a node that does not serve its key');
});

test('CROSSSLOT', async () => {
  await assert.rejects(cluster.call('RL.HITALL', 2, 'api', 'io:a', 'api', 'io:b'), /CROSSSLOT/);
});

test('reads on replicas with scaleReads: slave', { skip: primaries === 1 && 'one emulated node has no replicas' }, async () => {
  const key = `${run}:io:ro`;
  assert.equal(await cluster.set(key, 'v'), 'OK');
  // ioredis sends READONLY to the replicas and GET, a read-only command,
  // to the replica of the key's slot.
  const reader = new Redis.Cluster([{ host: '127.0.0.1', port }], { ...options, scaleReads: 'slave' });
  try {
    await ready(reader);
    const slot = await reader.cluster('KEYSLOT', key);
    const addr = reader.slots[slot][1];
    const replica = reader.nodes('slave').find((n) => `${n.options.host}:${n.options.port}` === addr);
    assert.ok(replica, `no replica ${addr} for slot ${slot}`);
    const before = await getCalls(replica);
    const deadline = Date.now() + 5000;
    let got;
    while ((got = await reader.get(key)) !== 'v') {
      assert.ok(Date.now() < deadline, `replica ${addr} never had ${key}: GET answered ${got}`);
      await sleep(50);
    }
    assert.ok((await getCalls(replica)) > before, `replica ${addr} served no GET`);
  } finally {
    reader.disconnect();
  }
});
