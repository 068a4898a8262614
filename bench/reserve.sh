#!/usr/bin/env bash
# reserve.sh: reserve-then-settle pairs, RL.RESERVE + RL.SETTLE on limitdb
# against the hand-written equivalent on redis-server (the reserve script:
# INCRBY, PEXPIRE on a new counter, DECRBY on a denial; then DECRBY by
# estimate - actual), and against the two scripts written with RL.RESERVE's
# guarantees (redis-exact: bench/lua/reserve_exact.lua and settle_exact.lua,
# equal to limitdb step by step in TestExactReserveScriptsMatchLimitdb),
# same run, same client (bench/reservepair): 8 connections, 16 pairs a
# round trip, 10k random keys. Both servers are pinned to core 0 and the
# client to core 1. For each round it prints pairs/s and the server's CPU
# time per pair, then the medians and the ratios limitdb/Redis for each
# Redis side (the issue's goal: at least 3x).
#
#   bench/reserve.sh                     3 rounds of 5 s each side
#   ROUNDS=5 DURATION=10s bench/reserve.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-8}
PIPELINE=${PIPELINE:-16}
for tool in redis-server redis-cli taskset python3 go; do
  command -v "$tool" >/dev/null || { echo "reserve.sh: $tool is required" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. bench/lib.sh

LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb
go build -o "$work/reservepair" ./bench/reservepair
start_pair

# one mode port pid: a run of the client; prints "pairs_per_s cpu_us_per_pair".
one() {
  local before after line pairs
  before=$(cpu_ticks "$3")
  line=$(taskset -c 1 "$work/reservepair" -addr "127.0.0.1:$2" -mode "$1" -conns "$CONNS" -pipeline "$PIPELINE" -duration "$DURATION")
  after=$(cpu_ticks "$3")
  pairs=$(echo "$line" | cut -d, -f2)
  python3 -c "import sys; p=int(sys.argv[1]); t=int(sys.argv[2]); print(sys.argv[3], '%.2f' % (t*1e6/int(sys.argv[4])/max(p,1)))" \
    "$pairs" "$((after - before))" "$(echo "$line" | cut -d, -f4)" "$hz"
}

echo "round,server,pairs_per_s,cpu_us_per_pair"
results=()
for r in $(seq "$ROUNDS"); do
  read -r lps lcpu < <(one limitdb "$lp" "$lpid")
  read -r rps rcpu < <(one redis "$rp" "$rpid")
  read -r eps ecpu < <(one redis-exact "$rp" "$rpid")
  echo "$r,limitdb,$lps,$lcpu"
  echo "$r,redis,$rps,$rcpu"
  echo "$r,redis-exact,$eps,$ecpu"
  results+=("$lps $lcpu $rps $rcpu $eps $ecpu")
done
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
med = [statistics.median(r[i] for r in rows) for i in range(6)]
for i, side in enumerate(["limitdb", "redis", "redis-exact"]):
    print("median,%s,%.0f,%.2f" % (side, med[2*i], med[2*i+1]))
for i, side in [(1, "redis"), (2, "redis-exact")]:
    print("ratio pairs/s limitdb/%s: %.2fx" % (side, med[0] / med[2*i]))
    print("ratio pairs per CPU second limitdb/%s: %.2fx" % (side, med[2*i+1] / med[1] if med[1] else float("nan")))
'
