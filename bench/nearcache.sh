#!/usr/bin/env bash
# nearcache.sh: one hot key over its limit, hammered by many goroutines
# through package client, with and without the client's near cache of
# denials (client.WithNearCache), and with it and batching
# (client.WithBatching), same run (bench/README.md, "Near cache"). The
# issue's goal: the near cache removes at least 90% of the round trips for
# a key over its limit, with the same decisions (the decisions themselves
# are proved identical on a replayed trace by client's
# TestNearCacheReplaysTheSameDecisions; here the admitted rate must stay
# the policy's in every mode).
#
# limitdb is pinned to core 0 and bench/nearbench (CLIENTS goroutines, one
# gcra policy of LIMIT requests a second) to core 1. Each round runs the
# modes in turn on a fresh key and prints a line per mode; then the
# medians: the calls/s the application got, the RL.HIT commands/s the
# server ran, the fraction of calls that made no round trip, and the
# admitted rate.
#
#   bench/nearcache.sh                        3 rounds of 10 s
#   ROUNDS=1 DURATION=2s bench/nearcache.sh   a smoke run
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CLIENTS=${CLIENTS:-50}
LIMIT=${LIMIT:-100}
for tool in redis-cli taskset python3 go; do
  command -v "$tool" >/dev/null || { echo "nearcache.sh: $tool is required" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. bench/lib.sh

LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb
go build -o "$work/nearbench" ./bench/nearbench

lp=$(free_port)
mkdir -p "$work/l"
taskset -c 0 "$LIMITDB_BIN" --port "$lp" --dir "$work/l" --save 0 >"$work/l/log" 2>&1 &
lpid=$!; pids+=("$lpid")
wait_ready "$lp"

results=$work/results.txt
: >"$results"
for round in $(seq "$ROUNDS"); do
  for mode in plain near near+batch; do
    flags=()
    case $mode in
      near) flags=(-near) ;;
      near+batch) flags=(-near -batch 4) ;;
    esac
    taskset -c 1 "$work/nearbench" -addr "127.0.0.1:$lp" "${flags[@]}" -clients "$CLIENTS" \
      -limit "$LIMIT" -period 1s -duration "$DURATION" -key "hot:$round:$mode" | tee -a "$results"
  done
done
python3 - "$results" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    f = line.split()
    kv = dict(zip(f[0::2], f[1::2]))
    by.setdefault(kv["mode"], []).append(kv)
med = lambda rows, k: statistics.median(float(r[k]) for r in rows)
print()
print("medians over the rounds")
plain = med(by["plain"], "server_per_sec")
for mode, rows in by.items():
    print("%-11s calls/s %9.0f  server RL.HIT/s %9.0f (%.3fx plain)  round trips removed %6.2f%%  admitted/s %6.1f"
          % (mode, med(rows, "calls_per_sec"), med(rows, "server_per_sec"), med(rows, "server_per_sec") / plain,
             100 * med(rows, "removed"), med(rows, "admitted_per_sec")))
PY
