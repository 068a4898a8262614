// express-rate-limit with rate-limit-redis, run unchanged against
// redis-server (REDIS_SOCKET) and limitdb (LIMITDB_PORT), both on the real
// clock, through ioredis `call` and node-redis `sendCommand`; started by
// TestExpressRateLimit in tests/ratelibs_test.go.
//
// rate-limit-redis sends SCRIPT LOAD of two scripts at init, EVALSHA of
// them (reloading on NOSCRIPT), DECR and DEL. Its increment script runs
// PTTL, then SET PX or INCR; its get script returns {GET, PTTL}, where a
// missing key's GET is Lua false, so the reply is [nil, -2].
// Run: node --test express-rate-limit.test.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import Redis from 'ioredis';
import { createClient } from 'redis';
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';

const port = Number(process.env.LIMITDB_PORT);
assert.ok(port > 0, 'LIMITDB_PORT is not set');
const socket = process.env.REDIS_SOCKET;
assert.ok(socket, 'REDIS_SOCKET is not set');

const servers = {
  redis: { io: { path: socket }, nr: { socket: { path: socket, reconnectStrategy: false } } },
  limitdb: { io: { host: '127.0.0.1', port }, nr: { socket: { host: '127.0.0.1', port, reconnectStrategy: false } } },
};
const clients = [];
const connect = async (server, kind) => {
  if (kind === 'ioredis') {
    const c = new Redis({ ...servers[server].io, lazyConnect: true, maxRetriesPerRequest: 0 });
    await c.connect();
    clients.push(c);
    return { client: c, sendCommand: (...args) => c.call(...args) };
  }
  const c = createClient(servers[server].nr);
  await c.connect();
  clients.push(c);
  return { client: c, sendCommand: (...args) => c.sendCommand(args) };
};
after(() => Promise.all(clients.map((c) => c.quit())));

// seconds is what a reply's resetTime leaves, to the second.
const seconds = (info) => ({ totalHits: info.totalHits, resetIn: Math.round((info.resetTime.getTime() - Date.now()) / 1000) });

// storeTraffic drives the store as express-rate-limit does and returns
// every answer.
const storeTraffic = async (server, kind) => {
  const { client, sendCommand } = await connect(server, kind);
  const store = new RedisStore({ sendCommand, prefix: `erl-${kind}:` });
  store.init({ windowMs: 60000 });
  const out = [];
  for (let i = 0; i < 4; i++) out.push(['increment a', seconds(await store.increment('a'))]);
  out.push(['get a', seconds(await store.get('a'))]);
  await store.decrement('a');
  out.push(['get a after decrement', seconds(await store.get('a'))]);
  // A missing key: GET is nil, PTTL -2; the library parses nil to NaN.
  out.push(['get missing', seconds(await store.get('missing'))]);
  await store.resetKey('a');
  out.push(['get a after resetKey', seconds(await store.get('a'))]);
  out.push(['increment a after resetKey', seconds(await store.increment('a'))]);
  // A flushed script cache: EVALSHA answers NOSCRIPT, the store loads again.
  await sendCommand('SCRIPT', 'FLUSH');
  out.push(['increment after SCRIPT FLUSH', seconds(await store.increment('a'))]);
  out.push(['get after SCRIPT FLUSH', seconds(await store.get('a'))]);
  out.push(['raw get reply', await sendCommand('EVALSHA', await store.getScriptSha, '1', `erl-${kind}:missing`)]);
  out.push(['key left', await sendCommand('TYPE', `erl-${kind}:a`), Math.round(Number(await sendCommand('PTTL', `erl-${kind}:a`)) / 1000)]);
  return out;
};

for (const kind of ['ioredis', 'node-redis']) {
  test(`${kind}: rate-limit-redis store answers the same on Redis and limitdb`, async () => {
    const onRedis = await storeTraffic('redis', kind);
    const onLimitdb = await storeTraffic('limitdb', kind);
    assert.deepEqual(onLimitdb, onRedis);
    assert.deepEqual(onLimitdb.slice(0, 7).map(([, r]) => r.totalHits), [1, 2, 3, 4, 4, 3, NaN]);
    assert.deepEqual(onLimitdb[0][1], { totalHits: 1, resetIn: 60 });
    assert.deepEqual(onLimitdb.slice(7, 11).map(([, r]) => r.totalHits), [NaN, 1, 2, 2]);
    assert.deepEqual(onLimitdb[11][1], [null, -2]);
    assert.deepEqual(onLimitdb[12], ['key left', 'string', 60]);
  });
}

// appTraffic sends 6 plain HTTP requests to an express app limited to 4
// a minute, resets the client's key, and sends one more.
const appTraffic = async (server, kind) => {
  const { sendCommand } = await connect(server, kind);
  const limiter = rateLimit({
    windowMs: 60000,
    limit: 4,
    standardHeaders: 'draft-6',
    legacyHeaders: false,
    store: new RedisStore({ sendCommand, prefix: `erl-app-${kind}:` }),
  });
  const app = express();
  app.use(limiter);
  app.get('/', (req, res) => res.send('ok'));
  const srv = http.createServer(app);
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${srv.address().port}/`;
  const get = async () => {
    const r = await fetch(url);
    await r.text();
    return [r.status, r.headers.get('ratelimit-limit'), r.headers.get('ratelimit-remaining'), r.headers.get('ratelimit-reset')];
  };
  const out = [];
  try {
    for (let i = 0; i < 6; i++) out.push(await get());
    out.push(['getKey', seconds(await limiter.getKey('127.0.0.1'))]);
    await limiter.resetKey('127.0.0.1');
    out.push(await get());
  } finally {
    await new Promise((resolve) => srv.close(resolve));
  }
  return out;
};

for (const kind of ['ioredis', 'node-redis']) {
  test(`${kind}: an express app limited by express-rate-limit admits the same requests on Redis and limitdb`, async () => {
    const onRedis = await appTraffic('redis', kind);
    const onLimitdb = await appTraffic('limitdb', kind);
    assert.deepEqual(onLimitdb, onRedis);
    assert.deepEqual(onLimitdb, [
      [200, '4', '3', '60'], [200, '4', '2', '60'], [200, '4', '1', '60'], [200, '4', '0', '60'],
      [429, '4', '0', '60'], [429, '4', '0', '60'],
      ['getKey', { totalHits: 6, resetIn: 60 }],
      [200, '4', '3', '60'],
    ]);
  });
}
