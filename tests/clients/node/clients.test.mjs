// ioredis and node-redis, each over RESP2 and RESP3, against a limitdb
// started by tests/clients_test.go (LIMITDB_PORT) with a frozen clock, so
// every reply below is exact. Run: node --test clients.test.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { createClient } from 'redis';

const port = Number(process.env.LIMITDB_PORT);
assert.ok(port > 0, 'LIMITDB_PORT is not set');

// One adapter per client: send(args) -> reply, plus a name and a closer.
const clients = [];
for (const protocol of [2, 3]) {
  const io = new Redis({ host: '127.0.0.1', port, protocol, lazyConnect: true, maxRetriesPerRequest: 0 });
  await io.connect();
  clients.push({ name: `ioredis/resp${protocol}`, send: (args) => io.call(...args), close: () => io.quit() });

  const nr = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false }, RESP: protocol });
  await nr.connect();
  clients.push({ name: `node-redis/resp${protocol}`, send: (args) => nr.sendCommand(args.map(String)), close: () => nr.quit() });
}
after(() => Promise.all(clients.map((c) => c.close())));

// Every limiter command on the server, with a frozen clock: label (the
// command, maybe with a variant) -> steps of [args, expected reply].
const limiterSteps = {
  'CL.THROTTLE': [
    [['15', '30', '60'], [0, 16, 15, -1, 2]],
    [['15', '30', '60', '0'], [0, 16, 15, -1, 2]], // peek
    [['15', '30', '60', '15'], [0, 16, 0, -1, 32]],
    [['15', '30', '60'], [1, 16, 0, 2, 32]], // denied, not charged
    [['15', '30', '60', '17'], [1, 16, 0, -1, 32]], // can never fit
  ],
  GCRA: [
    [['2', '1', '0.5'], [0, 3, 2, -1, 1]],
    [['2', '1', '0.5', 'TOKENS', '2'], [0, 3, 0, -1, 2]],
    [['2', '1', '0.5'], [1, 3, 0, 1, 2]],
  ],
  'TB.TAKE': [
    [['10', '1', '1s'], [0, 10, 9, -1, 1000]],
    [['10', '1', '1s', '9'], [0, 10, 0, -1, 10000]],
    [['10', '1', '1s'], [1, 10, 0, 1000, 10000]],
    [['10', '1', '1s', '0'], [0, 10, 0, -1, 10000]],
    [['10', '1', '1s', '11'], [1, 10, 0, -1, 10000]],
  ],
  'LB.QUEUE': [ // the sixth field is the delay before the request may run
    [['3', '10', '1s'], [0, 3, 2, -1, 100, 0]],
    [['3', '10', '1s'], [0, 3, 1, -1, 200, 100]],
    [['3', '10', '1s'], [0, 3, 0, -1, 300, 200]],
    [['3', '10', '1s'], [1, 3, 0, 100, 300, -1]],
    [['3', '10', '1s', '0'], [0, 3, 0, -1, 300, 300]],
    [['3', '10', '1s', '4'], [1, 3, 0, -1, 300, -1]],
  ],
  'FW.INCR': [ // the frozen clock sits on a whole second
    [['3', '1s'], [0, 3, 2, -1, 1000]],
    [['3', '1s', '2'], [0, 3, 0, -1, 1000]],
    [['3', '1s'], [1, 3, 0, 1000, 1000]],
  ],
  'SW.INCR': [
    [['10', '1s', '10'], [0, 10, 0, -1, 2000]],
    [['10', '1s'], [1, 10, 0, 1100, 2000]],
  ],
  'SW.INCR PRECISION': [ // sub-windows of 100 ms
    [['10', '1s', '10', 'PRECISION', '10'], [0, 10, 0, -1, 1100]],
    [['10', '1s', '0', 'PRECISION', '10'], [0, 10, 0, -1, 1100]],
  ],
  'SL.INCR': [
    [['3', '1s'], [0, 3, 2, -1, 1000]],
    [['3', '1s', '2'], [0, 3, 0, -1, 1000]],
    [['3', '1s'], [1, 3, 0, 1000, 1000]],
    [['3', '1s', '4'], [1, 3, 0, -1, 1000]],
  ],
};

for (const c of clients) {
  test(`${c.name} speaks the protocol it asked for`, async () => {
    const info = await c.send(['CLIENT', 'INFO']);
    const want = c.name.endsWith('resp3') ? 'resp=3' : 'resp=2';
    assert.match(String(info), new RegExp(`\\b${want}\\b`), String(info));
  });

  for (const [label, steps] of Object.entries(limiterSteps)) {
    const command = label.split(' ')[0];
    test(`${c.name} ${label} answers typed integer arrays`, async () => {
      const key = `${c.name}:${label}`;
      for (const [i, [args, want]] of steps.entries()) {
        const got = await c.send([command, key, ...args]);
        assert.ok(Array.isArray(got), `step ${i}: ${JSON.stringify(got)} is not an array`);
        got.forEach((v, j) => assert.equal(typeof v, 'number', `step ${i} field ${j}: ${typeof v}`));
        assert.deepEqual(got, want, `step ${i}`);
      }
    });
  }

  test(`${c.name} RL.HIT and RL.HITALL apply named policies`, async () => {
    const p = c.name.replace("/", "."), sec = `${p}-sec`, day = `${p}-day`;
    assert.equal(await c.send(['RL.POLICY', 'SET', sec, 'gcra', '10', '1s']), 'OK');
    assert.equal(await c.send(['RL.POLICY', 'SET', day, 'gcra', '3', '1d']), 'OK');
    assert.deepEqual(await c.send(['RL.HIT', sec, 'bob']), [0, 10, 9, -1, 100]);
    assert.deepEqual(await c.send(['RL.HIT', sec, 'bob', '9']), [0, 10, 0, -1, 1000]);
    assert.deepEqual(await c.send(['RL.HIT', sec, 'bob']), [1, 10, 0, 100, 1000]);
    // All or nothing: [limited, reply per pair]; a denial charges no pair.
    assert.deepEqual(await c.send(['RL.HITALL', '2', sec, 'ann', day, 'ann', 'COST', '3']),
      [0, [0, 10, 7, -1, 300], [0, 3, 0, -1, 86400000]]);
    assert.deepEqual(await c.send(['RL.HITALL', '2', sec, 'ann', day, 'ann']),
      [1, [0, 10, 7, -1, 300], [1, 3, 0, 28800000, 86400000]]);
    assert.deepEqual(await c.send(['RL.HIT', sec, 'ann', '0']), [0, 10, 7, -1, 300]);
  });

  test(`${c.name} sees errors as errors and keeps the connection`, async () => {
    await assert.rejects(c.send(['CL.THROTTLE', 'k', '1', '0', '60']), /count must be at least 1/);
    await assert.rejects(c.send(['NOSUCH']), /unknown command/);
    assert.equal(await c.send(['PING']), 'PONG');
  });

  test(`${c.name} string and counter commands`, async () => {
    const key = `${c.name}:counter`;
    assert.equal(await c.send(['SET', key, '10', 'EX', '100', 'NX']), 'OK');
    assert.equal(await c.send(['INCRBY', key, '5']), 15);
    assert.equal(await c.send(['GET', key]), '15');
    assert.equal(await c.send(['PTTL', key]), 100000);
    assert.equal(await c.send(['SET', key, '1', 'NX']), null);
    await assert.rejects(c.send(['INCR', `${c.name}:CL.THROTTLE`]), /WRONGTYPE/);
  });
}
