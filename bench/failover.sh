#!/usr/bin/env bash
# failover.sh: what a Sentinel failover loses of a limiter's acknowledged
# admissions. Each run starts a limitdb primary, two replicas and three
# redis-sentinels, puts CL.THROTTLE on KEYS keys (LIMIT admissions each,
# nothing refilling; the default is never reached, so lost is the measure) through go-redis's FailoverClient (bench/failoverload),
# kill -9s the primary after BEFORE, waits for the promotion, loads AFTER
# more, then peeks every key on the new primary and prints per run:
#
#   acked    admissions the client was told of
#   lost     acknowledged admissions the new primary does not count
#   over     keys admitted past their limit; overby: by how many in all
#
# and the totals over RUNS runs.
#
#   RUNS=10 bench/failover.sh
#   RUNS=20 LIMITDB_ARGS='--limiter-wait-replicas 1' bench/failover.sh
#   KEYS=1000 LIMIT=100 WORKERS=32 bench/failover.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-1}
KEYS=${KEYS:-500}
LIMIT=${LIMIT:-100000}
WORKERS=${WORKERS:-16}
BEFORE=${BEFORE:-3s}
AFTER=${AFTER:-3s}
LIMITDB_ARGS=${LIMITDB_ARGS:-}

for tool in redis-sentinel redis-cli python3; do
  command -v "$tool" >/dev/null || { echo "failover.sh: $tool is required" >&2; exit 1; }
done

# shellcheck source=bench/lib.sh
. bench/lib.sh

LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb
go build -o "$work/failoverload" ./bench/failoverload

sum_acked=0 sum_lost=0 sum_over=0 sum_overby=0
for run in $(seq 1 "$RUNS"); do
  dir=$work/run$run
  mkdir -p "$dir"
  run_pids=()
  ports=()
  for i in 0 1 2; do
    p=$(free_port)
    ports+=("$p")
    mkdir -p "$dir/n$i"
    args=(--port "$p" --dir "$dir/n$i" --save 0)
    # shellcheck disable=SC2206
    args+=($LIMITDB_ARGS)
    [ "$i" -gt 0 ] && args+=(--replicaof "127.0.0.1 ${ports[0]}")
    "$LIMITDB_BIN" "${args[@]}" >"$dir/n$i/log" 2>&1 &
    pids+=($!); run_pids+=($!)
    echo $! >"$dir/n$i/pid"
    wait_ready "$p"
  done
  for i in 1 2; do
    until redis-cli -p "${ports[$i]}" INFO replication | grep -q 'master_link_status:up'; do sleep 0.1; done
  done
  sentinels=()
  for i in 0 1 2; do
    sp=$(free_port)
    sentinels+=("127.0.0.1:$sp")
    cat >"$dir/sentinel$i.conf" <<CONF
port $sp
bind 127.0.0.1
dir $dir
sentinel monitor limits 127.0.0.1 ${ports[0]} 2
sentinel down-after-milliseconds limits 1000
sentinel failover-timeout limits 10000
sentinel parallel-syncs limits 2
CONF
    redis-sentinel "$dir/sentinel$i.conf" >"$dir/sentinel$i.log" 2>&1 &
    pids+=($!); run_pids+=($!)
    wait_ready "$sp"
  done
  # Every Sentinel must know its peers and the replicas before the kill.
  for s in "${sentinels[@]}"; do
    until [ "$(redis-cli -p "${s##*:}" SENTINEL CKQUORUM limits 2>/dev/null | cut -c1-2)" = OK ] &&
      [ "$(redis-cli -p "${s##*:}" SENTINEL REPLICAS limits | grep -c '^name$')" -eq 2 ]; do sleep 0.2; done
  done
  line=$("$work/failoverload" -sentinels "$(IFS=,; echo "${sentinels[*]}")" -keys "$KEYS" -limit "$LIMIT" \
    -workers "$WORKERS" -before "$BEFORE" -after "$AFTER" -kill "$dir/n0/pid" -prefix "run$run" 2>"$dir/load.log") || { cat "$dir/load.log" >&2; exit 1; }
  echo "run $run: $line $(grep -o "failover after .*" "$dir/load.log" || true)"
  for f in acked lost over overby; do
    v=$(sed -n "s/.*\b$f=\([0-9]*\).*/\1/p" <<<"$line")
    eval "sum_$f=\$((sum_$f + v))"
  done
  for p in "${run_pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${run_pids[@]}"; do wait "$p" 2>/dev/null || true; done
done
echo "total over $RUNS runs: acked=$sum_acked lost=$sum_lost over=$sum_over overby=$sum_overby"
