// bottleneck 2.19.5 in clustering mode (datastore "ioredis"), run unchanged
// against redis-server (REDIS_SOCKET) and limitdb (LIMITDB_PORT), both on
// the real clock; started by TestBottleneck in tests/ratelibs_test.go.
//
// Its Redis datastore keeps every limiter's state in hashes and sorted sets
// and changes it only through its 20 Lua scripts (defined with ioredis
// defineCommand: EVALSHA, EVAL on NOSCRIPT), which call TIME,
// redis.replicate_commands(), HSTRLEN, RENAME and PUBLISH; a second
// connection SUBSCRIBEs to the limiter's channels.
// Run: node --test bottleneck.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Bottleneck from 'bottleneck';

const port = Number(process.env.LIMITDB_PORT);
assert.ok(port > 0, 'LIMITDB_PORT is not set');
const socket = process.env.REDIS_SOCKET;
assert.ok(socket, 'REDIS_SOCKET is not set');

const servers = {
  redis: { path: socket },
  limitdb: { host: '127.0.0.1', port },
};

// until resolves once cond() holds, polling; bottleneck's jobs run on its
// own timers.
const until = async (what, cond, ms = 5000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

// burst schedules 20 jobs on a limiter with a reservoir of 5 and at most 2
// at once, tops the reservoir up by 3, and says what ran and what the
// datastore counted at each point.
const burst = async (server) => {
  const errors = [];
  const limiter = new Bottleneck({
    id: `burst-${server}`,
    datastore: 'ioredis',
    clearDatastore: true,
    clientOptions: { ...servers[server], maxRetriesPerRequest: 0 },
    reservoir: 5,
    maxConcurrent: 2,
  });
  limiter.on('error', (e) => errors.push(String(e)));
  await limiter.ready();
  const out = [];
  let ran = 0;
  let maxAtOnce = 0;
  let atOnce = 0;
  const job = async (i) => {
    atOnce++;
    maxAtOnce = Math.max(maxAtOnce, atOnce);
    await new Promise((r) => setTimeout(r, 5));
    atOnce--;
    ran++;
    return i;
  };
  const settled = [];
  try {
    for (let i = 0; i < 20; i++) settled.push(limiter.schedule({ id: `job-${i}` }, job, i).catch((e) => `dropped: ${e.message}`));
    // Settled: every job submitted to the datastore (none RECEIVED), none running.
    const settledAt = (n) => async () => ran === n && limiter.counts().RECEIVED === 0 && (await limiter.running()) === 0;
    const snapshot = async (what) => [what, ran, await limiter.currentReservoir(), await limiter.running(), await limiter.done(),
      await limiter.clusterQueued(), limiter.counts()];
    await until(`5 jobs on ${server}`, settledAt(5));
    out.push(await snapshot('after the reservoir ran out'));
    assert.equal(await limiter.incrementReservoir(3), 3);
    await until(`8 jobs on ${server}`, settledAt(8));
    out.push(await snapshot('after 3 more'));
    // how many overlapped depends on scheduling; the limit must hold
    out.push(['at most 2 at once', maxAtOnce <= 2]);
    await limiter.updateSettings({ reservoir: 100 });
    await until(`all jobs on ${server}`, settledAt(20)).catch(async (e) => {
      throw new Error(`${e.message}: ${ran} ran, reservoir ${await limiter.currentReservoir()}, running ${await limiter.running()}, counts ${JSON.stringify(limiter.counts())}, errors ${errors}`);
    });
    out.push(await snapshot('after the reservoir was set to 100'));
    out.push(['results', (await Promise.all(settled)).join(',')]);
  } finally {
    await limiter.disconnect();
  }
  out.push(['errors', errors]);
  return out;
};

test('bottleneck admits the same jobs on Redis and limitdb', async () => {
  const onRedis = await burst('redis');
  const onLimitdb = await burst('limitdb');
  assert.deepEqual(onLimitdb, onRedis);
  // [what, jobs run, reservoir, running, done, queued in the cluster, local counts]
  const idle = { RECEIVED: 0, QUEUED: 0, RUNNING: 0, EXECUTING: 0 };
  assert.deepEqual(onLimitdb.slice(0, 4), [
    ['after the reservoir ran out', 5, 0, 0, 5, 15, { ...idle, QUEUED: 15 }],
    ['after 3 more', 8, 0, 0, 8, 12, { ...idle, QUEUED: 12 }],
    ['at most 2 at once', true],
    ['after the reservoir was set to 100', 20, 88, 0, 20, 0, idle],
  ]);
  assert.equal(onLimitdb[4][1], Array.from({ length: 20 }, (_, i) => i).join(','));
  assert.deepEqual(onLimitdb.at(-1), ['errors', []]);
});
