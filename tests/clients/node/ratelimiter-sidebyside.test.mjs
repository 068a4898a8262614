// rate-limiter-flexible's RateLimiterRedis, run unchanged against
// redis-server (REDIS_SOCKET) and limitdb (LIMITDB_PORT), both on the real
// clock, through ioredis and node-redis; started by
// TestRateLimiterFlexibleSideBySide in tests/ratelibs_test.go. The same
// calls must give the same consumed and remaining points, msBeforeNext to
// the second, and the same refusals.
// Run: node --test ratelimiter-sidebyside.test.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { createClient } from 'redis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

const port = Number(process.env.LIMITDB_PORT);
assert.ok(port > 0, 'LIMITDB_PORT is not set');
const socket = process.env.REDIS_SOCKET;
assert.ok(socket, 'REDIS_SOCKET is not set');

const clients = [];
const connect = async (server, kind) => {
  if (kind === 'ioredis') {
    const c = new Redis({ ...(server === 'redis' ? { path: socket } : { host: '127.0.0.1', port }), lazyConnect: true, maxRetriesPerRequest: 0 });
    await c.connect();
    clients.push(c);
    return [c, {}];
  }
  const c = createClient({ socket: server === 'redis' ? { path: socket, reconnectStrategy: false } : { host: '127.0.0.1', port, reconnectStrategy: false } });
  await c.connect();
  clients.push(c);
  return [c, { useRedisPackage: true }];
};
after(() => Promise.all(clients.map((c) => c.quit())));

// what a result says, msBeforeNext to the second
const fields = (r) => r === null ? null : ({ consumed: r.consumedPoints, remaining: r.remainingPoints, s: Math.round(r.msBeforeNext / 1000) });
const settle = (p) => p.then((r) => ['ok', fields(r)], (r) => [r instanceof RateLimiterRes ? 'refused' : `error ${r}`, r instanceof RateLimiterRes ? fields(r) : null]);

async function traffic(server, kind) {
  const [client, extra] = await connect(server, kind);
  const prefix = `rlf-sbs-${kind}`;
  const limiter = new RateLimiterRedis({ storeClient: client, points: 3, duration: 60, keyPrefix: prefix, ...extra });
  const out = [];
  for (let i = 0; i < 5; i++) out.push(['consume', await settle(limiter.consume('u1'))]);
  out.push(['consume 2', await settle(limiter.consume('u2', 2))]);
  out.push(['penalty', await settle(limiter.penalty('u2', 1))]);
  out.push(['reward', await settle(limiter.reward('u2', 2))]);
  out.push(['get', fields(await limiter.get('u2'))]);
  out.push(['get absent', fields(await limiter.get('nobody'))]);
  out.push(['block', await settle(limiter.block('u3', 30))]);
  out.push(['consume blocked', await settle(limiter.consume('u3'))]);
  out.push(['delete', await limiter.delete('u1')]);
  out.push(['consume after delete', await settle(limiter.consume('u1'))]);
  const burst = await Promise.allSettled(Array.from({ length: 20 }, () => limiter.consume('burst')));
  out.push(['burst of 20 at a limit of 3', burst.filter((r) => r.status === 'fulfilled').length]);
  return out;
}

for (const kind of ['ioredis', 'node-redis']) {
  test(`${kind}: the same answers from Redis and limitdb`, async () => {
    const [onRedis, onLimitdb] = await Promise.all([traffic('redis', kind), traffic('limitdb', kind)]);
    assert.deepEqual(onLimitdb, onRedis);
    assert.deepEqual(onRedis.at(-1), ['burst of 20 at a limit of 3', 3]);
  });
}
