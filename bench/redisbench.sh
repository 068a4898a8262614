#!/usr/bin/env bash
# redisbench.sh: redis-benchmark's default test list (PING, SET, GET, INCR,
# the list, set, hash and sorted-set tests, LRANGE, MSET) against limitdb
# and redis-server, same run, both servers pinned to core 0 and
# redis-benchmark to core 1 (50 clients, no pipelining: the tool's
# defaults). It prints, per test, each server's req/s (median over ROUNDS,
# the servers alternating) and limitdb / Redis.
#
#   bench/redisbench.sh                 3 rounds of 100k requests a test
#   ROUNDS=5 N=200000 bench/redisbench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
N=${N:-100000}
for tool in redis-server redis-cli redis-benchmark taskset python3 go; do
  command -v "$tool" >/dev/null || { echo "redisbench.sh: $tool is required" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. bench/lib.sh

LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb
start_pair

# one server port round: the tool's CSV lines, prefixed with the server.
one() {
  redis-cli -p "$2" FLUSHALL >/dev/null
  taskset -c 1 redis-benchmark -p "$2" -n "$N" --csv | tail -n +2 | sed "s/^/$1,$3,/"
}

for r in $(seq "$ROUNDS"); do
  if ((r % 2)); then one limitdb "$lp" "$r"; one redis "$rp" "$r"; else one redis "$rp" "$r"; one limitdb "$lp" "$r"; fi
done > "$work/all.csv"
python3 - "$work/all.csv" <<'PY'
import csv, statistics, sys
rps = {}
order = []
for row in csv.reader(open(sys.argv[1])):
    server, _, test, value = row[0], row[1], row[2], float(row[3])
    if test not in order:
        order.append(test)
    rps.setdefault((server, test), []).append(value)
print("%-40s %12s %12s %8s" % ("test", "limitdb", "redis", "ratio"))
for t in order:
    l = statistics.median(rps.get(("limitdb", t), [0]))
    r = statistics.median(rps.get(("redis", t), [0]))
    print("%-40s %12.0f %12.0f %8.2f" % (t, l, r, l / r if r else float("nan")))
PY
