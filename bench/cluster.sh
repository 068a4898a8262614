#!/usr/bin/env bash
# cluster.sh: CL.THROTTLE through a cluster client on clusters of 1, 2 and 3
# primaries, limitdb against Redis Cluster of the same shape in the same run
# (bench/README.md, "Cluster").
#
# For each shape, in rounds whose order of servers alternates, it starts
# that many cluster-enabled primaries (no replicas: on a 2-core machine a
# replica's CPU would be taken from the primaries' or the client's), builds
# the cluster with redis-cli --cluster create (3 primaries or more; redis-cli
# refuses fewer) or with CLUSTER ADDSLOTSRANGE and CLUSTER MEET (fewer),
# waits until redis-cli --cluster check finds every slot covered and every
# node agreeing, and drives it with bench/clusterload (go-redis
# ClusterClient, 50 workers, pipeline 16, split by node): limitdb's
# CL.THROTTLE, and on Redis an INCR and bench/lua/gcra.lua (the same GCRA as
# a Lua script, EVALSHA), each on KEYS random keys. Every primary is pinned
# to core 0 and clusterload to core 1, so a shape of N primaries is N
# processes sharing one core: the figures are per core, and what changes
# with N is the cost of routing and of splitting each pipeline by node, not
# the added machines (docs/cluster.md, "Scaling model", has those).
#
# It prints every run, then a markdown table of the medians over the rounds:
# req/s, p50 and p99 (a command's latency is its pipeline's round trip) and
# the primaries' CPU (share of one core; under 100% means the client was the
# bottleneck), and the ratio limitdb / Redis per shape, the median of the
# per-round ratios with a bootstrap 90% interval.
#
#   bench/cluster.sh                              3 rounds of 5 s per load
#   ROUNDS=7 DURATION=10s bench/cluster.sh
#   PRIMARIES="1 3" LUA=0 bench/cluster.sh        some shapes; no Lua row
#   KEYS=2000 ROUNDS=1 DURATION=1s bench/cluster.sh   a smoke run
#   LIMITDB_BIN=/tmp/limitdb-abc123 bench/cluster.sh
#
# With RESHARD=n it measures a reshard instead (docs/cluster.md, "Moving
# slots"): per round, for limitdb and for Redis in turn (the order
# alternating), three primaries with a replica each built with redis-cli
# --cluster create, a load through bench/clusterload (RESHARD_WORKERS
# workers, pipeline 1, on KEYS keys: limitdb's CL.THROTTLE, Redis's INCR;
# RESHARD_WORKERS=0 for none), and the time redis-cli --cluster reshard
# takes to move n slots from the owner of slot 0 to the owner of slot
# 16383; then redis-cli --cluster check, run the moment reshard returns,
# clean or not. It prints each run, then the median seconds of each and
# the ratio limitdb / Redis.
#
#   RESHARD=1000 bench/cluster.sh                 3 rounds under load
#   RESHARD=100 ROUNDS=1 bench/cluster.sh         a smoke run
#   RESHARD=1000 RESHARD_WORKERS=0 bench/cluster.sh   idle
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
KEYS=${KEYS:-100000}
PRIMARIES=${PRIMARIES:-"1 2 3"}
WORKERS=${WORKERS:-50}
PIPELINE=${PIPELINE:-16}
LIMIT=${LIMIT:-"99 100 60"}   # max_burst count period: keys stay live, as INCR's do
LUA=${LUA:-1}
NODE_TIMEOUT=${NODE_TIMEOUT:-5000}   # cluster-node-timeout, ms; nothing fails here
RESHARD=${RESHARD:-0}
RESHARD_WORKERS=${RESHARD_WORKERS:-8}
REPLICAS=0   # replicas per primary that build makes
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

for tool in redis-server redis-cli taskset python3; do
  command -v "$tool" >/dev/null || { echo "cluster.sh: $tool is required" >&2; exit 1; }
done
[ -r /proc/self/stat ] || { echo "cluster.sh: needs Linux /proc" >&2; exit 1; }

# shellcheck source=bench/lib.sh
. bench/lib.sh

LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb
go build -o "$work/clusterload" ./bench/clusterload

# start kind port bus dir: one cluster-enabled primary, in the background.
start() {
  local kind=$1 port=$2 bus=$3 dir=$4
  mkdir -p "$dir"
  if [ "$kind" = limitdb ]; then
    taskset -c "$SERVER_CPU" "$LIMITDB_BIN" --port "$port" --cluster-port "$bus" --cluster-enabled yes \
      --cluster-node-timeout "$NODE_TIMEOUT" --dir "$dir" --save 0 >"$dir/log" 2>&1 &
  else
    taskset -c "$SERVER_CPU" redis-server --port "$port" --cluster-port "$bus" --cluster-enabled yes \
      --cluster-config-file "$dir/nodes.conf" --cluster-node-timeout "$NODE_TIMEOUT" \
      --dir "$dir" --save '' --appendonly no >"$dir/log" 2>&1 &
  fi
  pids+=($!)
  wait_ready "$port"
}

# build port... (as "port:bus"): one cluster of those primaries, each
# owning an equal run of slots.
build() {
  local n=$# nodes=("$@") i
  if [ "$n" -ge 3 ]; then
    local addrs=()
    for i in "${nodes[@]}"; do addrs+=("127.0.0.1:${i%:*}"); done
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$REPLICAS" --cluster-yes >"$work/create.log" 2>&1 ||
      { cat "$work/create.log" >&2; exit 1; }
  else
    for i in $(seq 0 $((n - 1))); do
      redis-cli -p "${nodes[$i]%:*}" CLUSTER ADDSLOTSRANGE $((16384 * i / n)) $((16384 * (i + 1) / n - 1)) | grep -q OK ||
        { echo "cluster.sh: ADDSLOTSRANGE refused on ${nodes[$i]%:*}" >&2; exit 1; }
    done
    for i in $(seq 1 $((n - 1))); do
      redis-cli -p "${nodes[$i]%:*}" CLUSTER MEET 127.0.0.1 "${nodes[0]%:*}" "${nodes[0]#*:}" | grep -q OK ||
        { echo "cluster.sh: CLUSTER MEET refused on ${nodes[$i]%:*}" >&2; exit 1; }
    done
  fi
  # Until every node sees the whole cluster and redis-cli finds it sound.
  for _ in $(seq 300); do
    local ok=1
    for i in "${nodes[@]}"; do
      redis-cli -p "${i%:*}" CLUSTER INFO | tr -d '\r' |
        grep -qx "cluster_known_nodes:$n" || ok=0
      redis-cli -p "${i%:*}" CLUSTER INFO | tr -d '\r' | grep -qx 'cluster_state:ok' || ok=0
    done
    if [ "$ok" = 1 ] && redis-cli --cluster check "127.0.0.1:${nodes[0]%:*}" >"$work/check.log" 2>&1 &&
      grep -q 'All nodes agree about slots configuration' "$work/check.log" &&
      grep -q 'All 16384 slots covered' "$work/check.log"; then
      return 0
    fi
    sleep 0.1
  done
  echo "cluster.sh: the cluster of $n never settled; redis-cli --cluster check says:" >&2
  cat "$work/check.log" >&2
  exit 1
}

# stop_all: kill the servers of the last cluster.
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}

ticks() { # pid... -> their utime+stime, in clock ticks
  local s=0 p
  for p in "$@"; do s=$((s + $(awk '{print $14+$15}' "/proc/$p/stat"))); done
  echo "$s"
}

results=$work/results.csv
: >"$results"

# load kind n round label prefix clusterload-args...: one measurement.
load() {
  local kind=$1 n=$2 round=$3 label=$4 prefix=$5 seed=$6
  shift 6
  local s0 s1 t0 t1 out
  s0=$(ticks "${pids[@]}")
  t0=$(date +%s.%N)
  # The wrapper's children's CPU (cutime + cstime) is clusterload's.
  bash -c '"$@" >'"$work/out"' || exit; cat /proc/$$/stat >'"$work/client" _ \
    taskset -c "$CLIENT_CPU" "$work/clusterload" -addr "$seed" -keys "$KEYS" -prefix "$prefix" \
    -workers "$WORKERS" -pipeline "$PIPELINE" -duration "$DURATION" -label "$label" "$@"
  t1=$(date +%s.%N)
  s1=$(ticks "${pids[@]}")
  out=$(cat "$work/out")
  python3 - "$kind" "$n" "$round" "$out" "$s0" "$s1" "$t0" "$t1" "$work/client" <<'PY' | tee -a "$results"
import os, sys
kind, n, rnd, out, s0, s1, t0, t1, client = sys.argv[1:]
label, primaries, rps, p50, p99, p999, mx, errors = out.split(",")
if int(primaries) != int(n):
    sys.exit(f"cluster.sh: the client sees {primaries} primaries, want {n}")
if int(errors):
    sys.exit(f"cluster.sh: {kind} {label}: {errors} commands failed")
hz = os.sysconf("SC_CLK_TCK")
secs = float(t1) - float(t0)
f = open(client).read().split()
cl = (int(f[15]) + int(f[16])) / hz
print(f"{kind},{label},{n},{rnd},{rps},{p50},{p99},{100 * (int(s1) - int(s0)) / hz / secs:.0f},{100 * cl / secs:.0f}")
PY
}

# run kind n round: build a cluster of n and run its loads.
run() {
  local kind=$1 n=$2 round=$3 nodes=() i
  for i in $(seq "$n"); do
    local p b
    p=$(free_port); b=$(free_port)
    start "$kind" "$p" "$b" "$work/$kind-$n-$round/$i"
    nodes+=("$p:$b")
  done
  build "${nodes[@]}"
  local seed=127.0.0.1:${nodes[0]%:*}
  if [ "$kind" = limitdb ]; then
    load limitdb "$n" "$round" CL.THROTTLE key: "$seed" -cmd "CL.THROTTLE {k} $LIMIT"
  else
    load redis "$n" "$round" INCR key: "$seed" -cmd "INCR {k}"
    if [ "$LUA" = 1 ]; then
      load redis "$n" "$round" lua-gcra lua: "$seed" -script bench/lua/gcra.lua -cmd "EVALSHA {sha} 1 {k} $LIMIT"
    fi
  fi
  stop_all
}

# reshard_run kind round: build three primaries with a replica each, time
# a reshard of $RESHARD slots under the load, then check at once.
reshard_run() {
  local kind=$1 round=$2 nodes=() i loadpid=""
  for i in $(seq 6); do
    local p b
    p=$(free_port); b=$(free_port)
    start "$kind" "$p" "$b" "$work/$kind-reshard-$round/$i"
    nodes+=("$p:$b")
  done
  REPLICAS=1 build "${nodes[@]}"
  local seed=127.0.0.1:${nodes[0]%:*} from to t0 t1 clean=yes
  from=$(redis-cli -p "${nodes[0]%:*}" CLUSTER NODES | awk '$3 ~ /master/ && $9 ~ /^0-/ {print $1}')
  to=$(redis-cli -p "${nodes[0]%:*}" CLUSTER NODES | awk '$3 ~ /master/ && $NF ~ /-16383$/ {print $1}')
  if [ "$RESHARD_WORKERS" -gt 0 ]; then
    local cmd="INCR {k}"
    [ "$kind" = limitdb ] && cmd="CL.THROTTLE {k} 99 100 60"
    taskset -c "$CLIENT_CPU" "$work/clusterload" -addr "$seed" -keys "$KEYS" -prefix rs: -workers "$RESHARD_WORKERS" \
      -pipeline 1 -duration 1h -warmup 0 -cmd "$cmd" >/dev/null 2>&1 &
    loadpid=$!
    sleep 1
  fi
  t0=$(date +%s.%N)
  redis-cli --cluster reshard "$seed" --cluster-from "$from" --cluster-to "$to" --cluster-slots "$RESHARD" \
    --cluster-yes >"$work/reshard.log" 2>&1 || { tail "$work/reshard.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  redis-cli --cluster check "$seed" >"$work/check.log" 2>&1 || clean=no
  grep -q 'WARNING\|ERR' "$work/check.log" && clean=no
  [ -n "$loadpid" ] && { kill "$loadpid" 2>/dev/null || true; wait "$loadpid" 2>/dev/null || true; }
  stop_all
  python3 -c "import sys; print(f'{sys.argv[1]},{sys.argv[2]},{float(sys.argv[4]) - float(sys.argv[3]):.2f},{sys.argv[5]}')" \
    "$kind" "$round" "$t0" "$t1" "$clean" | tee -a "$results"
}

if [ "$RESHARD" -gt 0 ]; then
  [ "$KEYS" = 100000 ] && KEYS=1000
  echo "server,round,reshard_s,check_clean"
  for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then
      reshard_run limitdb "$round"; reshard_run redis "$round"
    else
      reshard_run redis "$round"; reshard_run limitdb "$round"
    fi
  done
  python3 - "$results" "$RESHARD" "$RESHARD_WORKERS" "$KEYS" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
slots, workers, keys = sys.argv[2:]
t = {}
clean = {}
for kind, rnd, secs, ok in rows:
    t.setdefault(kind, {})[int(rnd)] = float(secs)
    clean.setdefault(kind, []).append(ok == "yes")
ratios = [t["limitdb"][r] / t["redis"][r] for r in t["limitdb"] if r in t.get("redis", {})]
print()
print(f"reshard of {slots} slots, 3 primaries with a replica each; load: {workers} workers on {keys} keys; "
      f"medians over {len(ratios)} rounds")
print()
print("| | limitdb | Redis | limitdb / Redis |")
print("|---|---|---|---|")
print(f"| seconds | {statistics.median(t['limitdb'].values()):.2f} | {statistics.median(t['redis'].values()):.2f} | "
      f"**{statistics.median(ratios):.2f}** ({min(ratios):.2f}-{max(ratios):.2f}) |")
print(f"| check clean at once | {sum(clean['limitdb'])} of {len(clean['limitdb'])} | "
      f"{sum(clean['redis'])} of {len(clean['redis'])} | |")
PY
  exit 0
fi

echo "server,load,primaries,round,rps,p50_us,p99_us,servers_cpu_pct,client_cpu_pct"
for round in $(seq "$ROUNDS"); do
  for n in $PRIMARIES; do
    if [ $((round % 2)) = 1 ]; then
      run limitdb "$n" "$round"; run redis "$n" "$round"
    else
      run redis "$n" "$round"; run limitdb "$n" "$round"
    fi
  done
done

python3 - "$results" "$KEYS" "$WORKERS" "$PIPELINE" "$DURATION" <<'PY'
import csv, random, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
keys, workers, pipeline, duration = sys.argv[2:]
runs = {}  # (server, load, n) -> {round: row}
for server, load, n, rnd, rps, p50, p99, scpu, ccpu in rows:
    runs.setdefault((server, load, int(n)), {})[int(rnd)] = [float(x) for x in (rps, p50, p99, scpu, ccpu)]
med = lambda xs: statistics.median(xs)
def col(key, i):
    return med(v[i] for v in runs[key].values())
rnd = random.Random(1)
def interval(xs):
    if len(xs) < 2:
        return ""
    meds = sorted(med(rnd.choices(xs, k=len(xs))) for _ in range(2000))
    return f" ({meds[100]:.2f}-{meds[1899]:.2f})"
print()
print(f"medians over {max(len(v) for v in runs.values())} rounds; {keys} random keys, "
      f"{workers} workers, pipeline {pipeline}, {duration} a load; latencies in microseconds; "
      "CPU: the primaries', % of one core")
print()
print("| primaries | Redis runs | limitdb CL.THROTTLE req/s, p50, p99, CPU | Redis req/s, p50, p99, CPU | limitdb / Redis |")
print("|---|---|---|---|---|")
names = {"INCR": "INCR", "lua-gcra": "`bench/lua/gcra.lua` (EVALSHA)"}
for n in sorted({k[2] for k in runs}):
    lk = ("limitdb", "CL.THROTTLE", n)
    for load in ("INCR", "lua-gcra"):
        rk = ("redis", load, n)
        if lk not in runs or rk not in runs:
            continue
        ratios = [runs[lk][r][0] / runs[rk][r][0] for r in runs[lk] if r in runs[rk]]
        fmt = lambda k: f"{col(k, 0):,.0f}, {col(k, 1):.0f}, {col(k, 2):.0f}, {col(k, 3):.0f}%"
        print(f"| {n} | {names[load]} | {fmt(lk)} | {fmt(rk)} | **{med(ratios):.2f}**{interval(ratios)} |")
PY
