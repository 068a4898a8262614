// bench.mjs: load of bottleneck 2.19.5 (clustering mode, datastore
// "ioredis"), unchanged, on one server; bench/bottleneck.sh runs it against
// limitdb and redis-server in turn.
//
//   node bench/bottleneck/bench.mjs PORT MODE SECONDS CONCURRENCY
//
// MODE check:    CONCURRENCY loops of limiter.check(1), one EVALSHA of
//                bottleneck's check script each (process_tick over the
//                limiter's hash and sorted sets, then HGET)
// MODE schedule: CONCURRENCY loops of limiter.schedule(job) with an empty
//                job and maxConcurrent 100: its submit, register and free
//                scripts, and the running-job sets, per job
//
// ioredis batches the commands of one tick into one write
// (enableAutoPipelining). It prints "MODE,calls,seconds".
import { createRequire } from 'node:module';

const require = createRequire(new URL('../../tests/clients/node/package.json', import.meta.url));
const Bottleneck = require('bottleneck');

const [port, mode, seconds, concurrency] = process.argv.slice(2);
const limiter = new Bottleneck({
  id: `bench-${mode}-${process.pid}`,
  datastore: 'ioredis',
  clearDatastore: true,
  clientOptions: { host: '127.0.0.1', port: Number(port), enableAutoPipelining: true },
  maxConcurrent: mode === 'schedule' ? 100 : null,
});
let failed = null;
limiter.on('error', (e) => { failed = e; });
await limiter.ready();

const call = mode === 'check' ? () => limiter.check(1) : () => limiter.schedule(() => Promise.resolve());
let calls = 0;
const start = Date.now();
const end = start + Number(seconds) * 1000;
const loop = async () => {
  while (Date.now() < end && !failed) {
    await call();
    calls++;
  }
};
await Promise.all(Array.from({ length: Number(concurrency) }, loop));
const took = (Date.now() - start) / 1000;
await limiter.disconnect(false);
if (failed) {
  console.error(`bottleneck: ${failed}`);
  process.exit(1);
}
console.log(`${mode},${calls},${took}`);
