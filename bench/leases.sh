#!/usr/bin/env bash
# leases.sh: a concurrency limit's acquire-then-release pairs on limitdb
# (CL.ACQUIRE + CL.RELEASE) against the hand-written sorted-set semaphore
# on redis-server (bench/lua/lease_acquire.lua by EVALSHA + ZREM, as
# redis-semaphore does), same run (bench/README.md, "Leases"). The issue's
# goal: at least 3x.
#
# Each server is pinned to core 0 and bench/leasebench (50 connections,
# 16 pairs pipelined per round trip, 10k random keys, every pair admitted
# and released) to core 1. Rounds alternate the servers; each prints pairs/s
# and the server's CPU time per pair, then the medians and limitdb/Redis:
# pairs/s, and pairs per CPU second.
#
#   bench/leases.sh                       3 rounds of 10 s
#   ROUNDS=5 DURATION=20s bench/leases.sh
#   ROUNDS=1 DURATION=1s bench/leases.sh  a smoke run
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-16}
KEYS=${KEYS:-10000}
for tool in redis-server redis-cli taskset python3 go; do
  command -v "$tool" >/dev/null || { echo "leases.sh: $tool is required" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. bench/lib.sh

LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb
go build -o "$work/leasebench" ./bench/leasebench

start_pair

results=$work/results.csv
: >"$results"
echo "server,round,pairs_per_sec,cpu_us_per_pair"
for round in $(seq "$ROUNDS"); do
  for kind in limitdb redis; do
    port=$lp pid=$lpid mode=limitdb
    [ "$kind" = redis ] && port=$rp pid=$rpid mode=lua
    before=$(cpu_ticks "$pid")
    line=$(taskset -c 1 "$work/leasebench" -addr "127.0.0.1:$port" -mode "$mode" \
      -script bench/lua/lease_acquire.lua -clients "$CLIENTS" -pipeline "$PIPELINE" \
      -keys "$KEYS" -duration "$DURATION")
    after=$(cpu_ticks "$pid")
    pairs=$(echo "$line" | awk '{print $2}')
    rate=$(echo "$line" | awk '{print $6}')
    cpu=$(python3 -c "print('%.2f' % (($after - $before) / $hz * 1e6 / max($pairs, 1)))")
    echo "$kind,$round,$rate,$cpu" | tee -a "$results"
  done
done
python3 - "$results" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
by = {}
for kind, rnd, rate, cpu in rows:
    by.setdefault(kind, []).append((float(rate), float(cpu)))
l, r = by["limitdb"], by["redis"]
lr, rr = statistics.median(x[0] for x in l), statistics.median(x[0] for x in r)
lc, rc = statistics.median(x[1] for x in l), statistics.median(x[1] for x in r)
print()
print("medians over the rounds: acquire+release pairs")
print("limitdb %8.0f pairs/s cpu %5.2f us/pair | redis (script + ZREM) %8.0f pairs/s cpu %5.2f us/pair | pairs/s %.2fx, pairs per CPU second %.2fx"
      % (lr, lc, rr, rc, lr / rr, rc / lc if lc else 0))
PY
