#!/usr/bin/env bash
# psync.sh: does a replica whose link is cut under load continue from the
# backlog (partial resynchronisation) or need a full copy? limitdb against
# redis-server, same topology, same offered load, in the same run
# (bench/README.md, "Partial resynchronisation").
#
# For each rate in RATES, for limitdb and Redis, it starts a primary pinned
# to core 0 and a replica pinned to core 1, waits for the link, offers the
# load with bench/loadgen (open loop, 50 connections, pipeline 16: limitdb's
# CL.THROTTLE on 100k keys, Redis's INCR on as many) and cuts the replica's
# link CUTS times, every INTERVAL seconds, with CLIENT KILL TYPE replica on
# the primary. Once the load ends and the link is up again it prints, from
# the primary's INFO stats, one CSV line:
#
#   server,rate,cuts,sync_partial_ok,sync_full,sync_partial_err,bytes/request
#
# where sync_full counts the first sync too (1 means every cut continued),
# and bytes/request is master_repl_offset over the requests served.
#
#   bench/psync.sh                           10 cuts at 57k and 150k writes/s
#   RATES=150000 CUTS=3 INTERVAL=0.5 bench/psync.sh     a short smoke run
#   LIMITDB_ARGS='--repl-backlog-size 1mb' bench/psync.sh   Redis's default backlog
set -euo pipefail
cd "$(dirname "$0")/.."

RATES=${RATES:-"57000 150000"}
CUTS=${CUTS:-10}
INTERVAL=${INTERVAL:-1}
LIMIT=${LIMIT:-"99 1000 60"}
LIMITDB_ARGS=${LIMITDB_ARGS:-}
REDIS_ARGS=${REDIS_ARGS:-}

for tool in redis-server redis-cli taskset python3; do
  command -v "$tool" >/dev/null || { echo "psync.sh: $tool is required" >&2; exit 1; }
done

# shellcheck source=bench/lib.sh
. bench/lib.sh

LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb
go build -o "$work/loadgen" ./bench/loadgen

# start kind port cpu dir [primary-port]: one server, in the background.
start() {
  local kind=$1 port=$2 cpu=$3 dir=$4 of=${5:-}
  mkdir -p "$dir"
  if [ "$kind" = limitdb ]; then
    local args=(--port "$port" --dir "$dir" --save 0)
    # shellcheck disable=SC2206
    args+=($LIMITDB_ARGS)
    [ -n "$of" ] && args+=(--replicaof "127.0.0.1 $of")
    taskset -c "$cpu" "$LIMITDB_BIN" "${args[@]}" >"$dir/log" 2>&1 &
  else
    local args=(--port "$port" --dir "$dir" --save '' --appendonly no --repl-diskless-sync-delay 0)
    # shellcheck disable=SC2206
    args+=($REDIS_ARGS)
    [ -n "$of" ] && args+=(--replicaof 127.0.0.1 "$of")
    taskset -c "$cpu" redis-server "${args[@]}" >"$dir/log" 2>&1 &
  fi
  pids+=($!)
  wait_ready "$port"
}

linked() { # port: until the replica there has its link up
  for _ in $(seq 600); do
    redis-cli -p "$1" INFO replication | grep -q 'master_link_status:up' && return 0
    sleep 0.05
  done
  echo "psync.sh: the replica on $1 never linked" >&2
  exit 1
}

stat() { # port field
  redis-cli -p "$1" INFO | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'
}

echo "server,rate,cuts,sync_partial_ok,sync_full,sync_partial_err,bytes/request"
for rate in $RATES; do
  for kind in limitdb redis; do
    dir=$work/$kind-$rate
    p=$(free_port); q=$(free_port)
    start "$kind" "$p" 0 "$dir/p"
    start "$kind" "$q" 1 "$dir/r" "$p"
    linked "$q"
    if [ "$kind" = limitdb ]; then cmd="CL.THROTTLE {k} $LIMIT"; else cmd="INCR {k}"; fi
    dur=$(python3 -c "print('%.2fs' % ($CUTS * $INTERVAL + 1))")
    off0=$(stat "$p" master_repl_offset)
    taskset -c 1 "$work/loadgen" -addr "127.0.0.1:$p" -rate "$rate" -pipeline 16 -conns 50 \
      -duration "$dur" -keys 100000 -cmd "$cmd" >"$dir/load" &
    load=$!
    sleep 0.5
    for _ in $(seq "$CUTS"); do
      redis-cli -p "$p" CLIENT KILL TYPE replica >/dev/null
      sleep "$INTERVAL"
    done
    wait "$load"
    linked "$q"
    served=$(python3 -c "import sys; f=open('$dir/load').read().strip().splitlines()[-1].split(','); print(round(float(f[2]) * float('${dur%s}')))")
    bytes=$(python3 -c "print('%.1f' % (($(stat "$p" master_repl_offset) - $off0) / max($served, 1)))")
    echo "$kind,$rate,$CUTS,$(stat "$p" sync_partial_ok),$(stat "$p" sync_full),$(stat "$p" sync_partial_err),$bytes"
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
  done
done
