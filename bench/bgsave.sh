#!/usr/bin/env bash
# Worst request latency while BGSAVE writes a snapshot of 1M keys, against
# the same load without one, on the same server in the same run.
#
# 1. fill limitdb with KEYS CL.THROTTLE keys (hour-long state) via redis-cli --pipe
# 2. offer a fixed load with bench/loadgen (open loop, no coordinated
#    omission) for DURATION, twice: once quiet, once with one BGSAVE started
#    a second into the window (the window must outlast the save)
# 3. print both CSV lines (p50, p99, p99.9, max in microseconds) and the
#    snapshot times from INFO persistence
#
# Usage: bench/bgsave.sh [keys] [rate] [duration]   (defaults 1000000 5000 5s)
# Keep the rate well below what the machine serves: a saturated server
# measures queueing, not the snapshot.
set -euo pipefail
KEYS=${1:-1000000}
RATE=${2:-5000}
DUR=${3:-5s}
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

go build -o "$work/limitdb" ./cmd/limitdb
go build -o "$work/loadgen" ./bench/loadgen
P=$(free_port)
"$work/limitdb" --port "$P" --dir "$work/data" --save 0 2>"$work/limitdb.log" &
pids+=($!)
wait_ready "$P"

awk -v n="$KEYS" 'BEGIN { for (i = 0; i < n; i++) { k = "key:" i;
  printf "*6\r\n$11\r\nCL.THROTTLE\r\n$%d\r\n%s\r\n$1\r\n1\r\n$1\r\n1\r\n$4\r\n3600\r\n$1\r\n1\r\n", length(k), k } }' |
  redis-cli -p "$P" --pipe >/dev/null
echo "keys: $(redis-cli -p "$P" DBSIZE)"

LOAD=(-addr "127.0.0.1:$P" -rate "$RATE" -duration "$DUR" -keys "$KEYS" -cmd 'CL.THROTTLE {k} 99 100 60')
"$work/loadgen" "${LOAD[@]}" -label warmup >/dev/null
echo "label,rate,achieved,p50_us,p99_us,p999_us,max_us,errors"
"$work/loadgen" "${LOAD[@]}" -label quiet

"$work/loadgen" "${LOAD[@]}" -label during-bgsave >"$work/during.csv" &
LG=$!
sleep 1
redis-cli -p "$P" BGSAVE >/dev/null
while redis-cli -p "$P" INFO persistence | grep -q '^rdb_bgsave_in_progress:1'; do sleep 0.05; done
kill -0 "$LG" 2>/dev/null || echo "WARNING: the load ended before the BGSAVE did; use a longer duration" >&2
wait "$LG"
cat "$work/during.csv"
sleep 1
redis-cli -p "$P" INFO persistence | tr -d '\r' | grep -E '^rdb_(last_save_keys|last_save_bytes|last_save_duration_ms|last_save_max_shard_hold_us|last_save_mean_shard_hold_us|saves)'
