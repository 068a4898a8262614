// rate-limiter-flexible, a widely used Node.js rate-limiting library, run
// unchanged against limitdb (LIMITDB_PORT, frozen clock) through ioredis and
// node-redis.
//
// Its Redis store has two classes. RateLimiterRedisNonAtomic sends no Lua:
// MULTI GET+PTTL, then MULTI SET EX (or SET + PEXPIRE), and DEL
// (lib/RateLimiterRedisNonAtomic.js). RateLimiterRedis runs a Lua script
// (EVALSHA/EVAL) for every consume with a duration, which limitdb runs on
// its Lua interpreter: consume, reward, penalty, get, block and delete.
// Run: node --test ratelimiter.test.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { createClient } from 'redis';
import { RateLimiterRedisNonAtomic, RateLimiterRedis, RateLimiterRes, RateLimiterMemory } from 'rate-limiter-flexible';

const port = Number(process.env.LIMITDB_PORT);
assert.ok(port > 0, 'LIMITDB_PORT is not set');

const io = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0 });
await io.connect();
const nr = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false } });
await nr.connect();
after(() => Promise.all([io.quit(), nr.quit()]));

// node-redis needs the library's documented useRedisPackage option: its
// auto-detection looks for a class name that node-redis 5+ no longer has.
const stores = [
  ['ioredis', io, {}],
  ['node-redis', nr, { useRedisPackage: true }],
];

// fields keeps what the frozen clock makes exact.
const fields = (r) => ({ consumed: r.consumedPoints, remaining: r.remainingPoints, msBeforeNext: r.msBeforeNext });

for (const [name, client, extra] of stores) {
  test(`${name}: RateLimiterRedisNonAtomic limits 3 points per minute`, async () => {
    const limiter = new RateLimiterRedisNonAtomic({ storeClient: client, points: 3, duration: 60, keyPrefix: `rlf-${name}`, ...extra });
    assert.deepEqual(fields(await limiter.consume('u1')), { consumed: 1, remaining: 2, msBeforeNext: 60000 });
    assert.deepEqual(fields(await limiter.consume('u1')), { consumed: 2, remaining: 1, msBeforeNext: 60000 });
    assert.deepEqual(fields(await limiter.consume('u1')), { consumed: 3, remaining: 0, msBeforeNext: 60000 });
    // Over the limit the promise rejects with a RateLimiterRes, not an Error.
    const denied = await limiter.consume('u1').then(() => assert.fail('4th consume admitted'), (r) => r);
    assert.ok(denied instanceof RateLimiterRes, `rejected with ${denied}`);
    assert.deepEqual(fields(denied), { consumed: 4, remaining: 0, msBeforeNext: 60000 });
    // Another key is independent.
    assert.deepEqual(fields(await limiter.consume('u2', 2)), { consumed: 2, remaining: 1, msBeforeNext: 60000 });

    assert.deepEqual(fields(await limiter.get('u1')), { consumed: 4, remaining: 0, msBeforeNext: 60000 });
    assert.deepEqual(fields(await limiter.reward('u1', 3)), { consumed: 1, remaining: 2, msBeforeNext: 60000 });
    assert.equal(await limiter.delete('u1'), true);
    assert.equal(await limiter.get('u1'), null);
    // The key it keeps is a plain Redis string with a TTL.
    assert.equal(await client.get(`rlf-${name}:u2`), '2');
  });

  test(`${name}: RateLimiterRedisNonAtomic block() holds a key for its duration`, async () => {
    const limiter = new RateLimiterRedisNonAtomic({ storeClient: client, points: 5, duration: 60, keyPrefix: `rlf-block-${name}`, ...extra });
    await limiter.block('u3', 10);
    const denied = await limiter.consume('u3').then(() => assert.fail('blocked key admitted'), (r) => r);
    assert.ok(denied instanceof RateLimiterRes, `rejected with ${denied}`);
    assert.equal(denied.msBeforeNext, 10000);
  });

  test(`${name}: RateLimiterRedis without a duration uses MULTI INCRBY+PTTL`, async () => {
    const limiter = new RateLimiterRedis({ storeClient: client, points: 2, duration: 0, keyPrefix: `rlf-forever-${name}`, ...extra });
    assert.deepEqual(fields(await limiter.consume('u4')), { consumed: 1, remaining: 1, msBeforeNext: -1 });
    assert.deepEqual(fields(await limiter.consume('u4')), { consumed: 2, remaining: 0, msBeforeNext: -1 });
    const denied = await limiter.consume('u4').then(() => assert.fail('3rd consume admitted'), (r) => r);
    assert.ok(denied instanceof RateLimiterRes, `rejected with ${denied}`);
  });

  test(`${name}: 50 requests at once against a limit of 10`, async () => {
    const burst = async (limiter) => {
      const results = await Promise.allSettled(Array.from({ length: 50 }, () => limiter.consume('burst')));
      return results.filter((r) => r.status === 'fulfilled').length;
    };
    const atomic = await burst(new RateLimiterRedis({ storeClient: client, points: 10, duration: 60, keyPrefix: `rlf-burst-a-${name}`, ...extra }));
    const nonAtomic = await burst(new RateLimiterRedisNonAtomic({ storeClient: client, points: 10, duration: 60, keyPrefix: `rlf-burst-n-${name}`, ...extra }));
    console.log(`# ${name}: 50 at once, limit 10: RateLimiterRedis admitted ${atomic}, RateLimiterRedisNonAtomic ${nonAtomic}`);
    assert.equal(atomic, 10);
    assert.ok(nonAtomic > 10, `RateLimiterRedisNonAtomic admitted ${nonAtomic}`);
  });

  test(`${name}: RateLimiterRedis runs its Lua script`, async () => {
    const limiter = new RateLimiterRedis({ storeClient: client, points: 2, duration: 60, keyPrefix: `rlf-lua-${name}`, ...extra });
    assert.deepEqual(fields(await limiter.consume('u5')), { consumed: 1, remaining: 1, msBeforeNext: 60000 });
    assert.deepEqual(fields(await limiter.consume('u5')), { consumed: 2, remaining: 0, msBeforeNext: 60000 });
    const denied = await limiter.consume('u5').then(() => assert.fail('3rd consume admitted'), (r) => r);
    assert.ok(denied instanceof RateLimiterRes, `rejected with ${denied}`);
    assert.deepEqual(fields(denied), { consumed: 3, remaining: 0, msBeforeNext: 60000 });
    assert.deepEqual(fields(await limiter.reward('u5', 2)), { consumed: 1, remaining: 1, msBeforeNext: 60000 });
    assert.deepEqual(fields(await limiter.penalty('u5', 1)), { consumed: 2, remaining: 0, msBeforeNext: 60000 });
    assert.deepEqual(fields(await limiter.get('u5')), { consumed: 2, remaining: 0, msBeforeNext: 60000 });
    assert.deepEqual(fields(await limiter.block('u6', 30)), { consumed: 3, remaining: 0, msBeforeNext: 30000 });
    assert.equal(await limiter.delete('u5'), true);
    assert.equal(await limiter.get('u5'), null);
  });
}
