#!/usr/bin/env bash
# bottleneck.sh: bottleneck 2.19.5's Redis datastore, unchanged, on limitdb
# and on redis-server in the same run (bench/README.md, "bottleneck").
#
# bottleneck keeps its limiters in hashes and sorted sets and changes them
# only through its 20 Lua scripts, none of which limitdb recognises: they
# run on the interpreter, so this is the 0.7x goal on a real library.
# Each server is pinned to core 0 and the Node.js client
# (bench/bottleneck/bench.mjs, ioredis with auto-pipelining) to core 1. In
# alternating rounds it runs CONCURRENCY loops of limiter.check(1) (one
# EVALSHA of the check script each) for SECONDS, and prints calls a second
# and the server's CPU time per call, then the medians and limitdb / Redis.
# The client's core caps the calls a second; the CPU per call is the
# server's own cost, the figure to compare.
#
#   bench/bottleneck.sh                      3 rounds of 4 s, 50 loops
#   ROUNDS=5 SECONDS_EACH=6 bench/bottleneck.sh
#   MODES="check schedule" bench/bottleneck.sh   schedule: jobs through
#                                            submit, register and free
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-4}
CONCURRENCY=${CONCURRENCY:-50}
MODES=${MODES:-check}
for tool in redis-server redis-cli taskset python3 go node; do
  command -v "$tool" >/dev/null || { echo "bottleneck.sh: $tool is required" >&2; exit 1; }
done
[ -d tests/clients/node/node_modules/bottleneck ] ||
  { echo "bottleneck.sh: run npm ci --prefix tests/clients/node first" >&2; exit 1; }
# shellcheck source=bench/lib.sh
. bench/lib.sh

LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb

start_pair

results=$work/results.csv
: >"$results"
echo "mode,server,round,calls_per_s,cpu_us_per_call"
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    for kind in limitdb redis; do
      port=$lp pid=$lpid; [ "$kind" = redis ] && port=$rp pid=$rpid
      before=$(cpu_ticks "$pid")
      line=$(taskset -c 1 node bench/bottleneck/bench.mjs "$port" "$mode" "$SECONDS_EACH" "$CONCURRENCY")
      after=$(cpu_ticks "$pid")
      IFS=, read -r _ calls took <<<"$line"
      python3 -c "print('%s,%s,%s,%.0f,%.2f' % ('$mode', '$kind', $round, $calls / $took, ($after - $before) / $hz * 1e6 / $calls))" |
        tee -a "$results"
    done
  done
done
echo
redis-cli -p "$lp" INFO scripting | grep -E '^(number_of_cached_scripts|native_)' | grep -v 'runs=0' || true
python3 - "$results" <<'PY'
import csv, statistics, sys
by = {}
for mode, kind, rnd, cps, cpu in csv.reader(open(sys.argv[1])):
    by.setdefault((mode, kind), []).append((float(cps), float(cpu)))
print()
print("medians over the rounds: calls/s, server CPU us per call; limitdb / Redis")
for mode in dict.fromkeys(m for m, _ in by):
    l, r = by[(mode, "limitdb")], by[(mode, "redis")]
    lc, rc = statistics.median(x[0] for x in l), statistics.median(x[0] for x in r)
    lu, ru = statistics.median(x[1] for x in l), statistics.median(x[1] for x in r)
    print("%-9s limitdb %7.0f calls/s cpu %6.2f us | redis %7.0f calls/s cpu %6.2f us | calls/s %.2fx, calls per CPU second %.2fx"
          % (mode, lc, lu, rc, ru, lc / rc, ru / lu))
PY
