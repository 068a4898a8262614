#!/usr/bin/env bash
# replication.sh: what replicas cost a primary, limitdb against redis-server
# with the same topology in the same run (bench/README.md, "Replication").
#
# For 0, 1 and 2 replicas, in alternating rounds, it starts a primary pinned
# to core 0 and its replicas pinned to core 1, waits until every replica's
# link is up, and runs redis-benchmark (50 clients, pipeline 16, on core 1
# beside the replicas): limitdb's CL.THROTTLE on 100k random keys, Redis's
# INCR on as many. While the load runs, bench/repllag writes a probe on the
# primary every 5 ms and times how long it takes to show on a replica: the
# replication lag under load. It prints every run, then each figure's median
# over the rounds:
#
#   limitdb R / limitdb 0    what R replicas cost limitdb (goal for 2: >= 0.85)
#   limitdb R / redis R      the replicated ratio (goal for 2: >= 1.0)
#   lag p50 / p99            microseconds, limitdb and Redis
#   CPU per request          the primary's, and each replica's: a replica's is
#                            taken from the load generator's core
#
# With FULLSYNC=1 it also times a full resynchronisation: a primary holding
# KEYS keys (limitdb: CL.THROTTLE states; Redis: strings), a replica started
# empty, from REPLICAOF to master_link_status:up.
#
#   bench/replication.sh                      3 rounds of 1M requests
#   ROUNDS=5 N=500000 bench/replication.sh
#   FULLSYNC=1 KEYS=1000000 ROUNDS=1 bench/replication.sh
#   LIMIT="999 1000 3600" bench/replication.sh  keys that stay live, as INCR's do
#   AOF=1 bench/replication.sh               adds limitdb and Redis with appendonly
#                                            yes, appendfsync everysec, no replica
#   LIMITDB_ARGS='--limiter-wait-replicas 1' bench/replication.sh
#                                            flags for every limitdb node (here: every
#                                            limiter reply waits for a replica's ACK)
#   RATE=150000 bench/replication.sh         the same offered load for every topology
#                                            (bench/loadgen, open loop) instead of
#                                            redis-benchmark's closed loop: the
#                                            primary's CPU per request at equal load
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
N=${N:-1000000}
PIPELINE=${PIPELINE:-16}
KEYS=${KEYS:-1000000}
REPLICAS=${REPLICAS:-"0 1 2"}
LIMIT=${LIMIT:-"99 1000 60"}   # max_burst count period of the CL.THROTTLE load
LIMITDB_ARGS=${LIMITDB_ARGS:-}

for tool in redis-server redis-cli redis-benchmark taskset python3; do
  command -v "$tool" >/dev/null || { echo "replication.sh: $tool is required" >&2; exit 1; }
done

# shellcheck source=bench/lib.sh
. bench/lib.sh

LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb
go build -o "$work/repllag" ./bench/repllag
[ -n "${RATE:-}" ] && go build -o "$work/loadgen" ./bench/loadgen

# start kind port cpu dir [primary-port] [extra args...]: one server, in the background.
start() {
  local kind=$1 port=$2 cpu=$3 dir=$4 of=${5:-}
  shift 5 || shift $#
  mkdir -p "$dir"
  if [ "$kind" = limitdb ]; then
    local args=(--port "$port" --dir "$dir" --save 0)
    # shellcheck disable=SC2206
    args+=($LIMITDB_ARGS)
    [ -n "$of" ] && args+=(--replicaof "127.0.0.1 $of")
    taskset -c "$cpu" "$LIMITDB_BIN" "${args[@]}" "$@" >"$dir/log" 2>&1 &
  else
    local args=(--port "$port" --dir "$dir" --save '' --appendonly no)
    [ -n "$of" ] && args+=(--replicaof 127.0.0.1 "$of")
    taskset -c "$cpu" redis-server "${args[@]}" "$@" >"$dir/log" 2>&1 &
  fi
  pids+=($!)
  wait_ready "$port"
}

# linked port: until the replica on port has its link up.
linked() {
  for _ in $(seq 600); do
    redis-cli -p "$1" INFO replication | grep -q 'master_link_status:up' && return 0
    sleep 0.05
  done
  echo "replication.sh: the replica on $1 never linked" >&2
  exit 1
}

# stop_all: kill the servers of the last topology.
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}

results=$work/results.csv
: >"$results"

# run kind R round [extra primary args]: one measurement.
run() {
  local kind=$1 r=$2 round=$3
  shift 3
  local dir=$work/$kind-$r-$round p cmd label=$kind
  p=$(free_port)
  start "$kind" "$p" 0 "$dir/p" "" "$@"
  local reps=()
  for i in $(seq "$r"); do
    local q
    q=$(free_port)
    start "$kind" "$q" 1 "$dir/r$i" "$p"
    reps+=("$q")
  done
  for q in "${reps[@]}"; do linked "$q"; done
  # shellcheck disable=SC2206
  if [ "$kind" = limitdb ]; then cmd=(CL.THROTTLE k:__rand_int__ $LIMIT); else cmd=(INCR k:__rand_int__); fi
  [ $# -gt 0 ] && label="$kind+aof"
  local lagpid=
  if [ "$r" -gt 0 ]; then
    "$work/repllag" -primary "127.0.0.1:$p" -replica "127.0.0.1:${reps[0]}" -duration 2s -label "$label,$r" >"$dir/lag" &
    lagpid=$!
  fi
  local rps cpu0 cpu1 rcpu0=0 rcpu1=0 ppid=${pids[0]} q
  cpu0=$(awk '{print $14+$15}' "/proc/$ppid/stat")
  for q in "${pids[@]:1}"; do rcpu0=$((rcpu0 + $(awk '{print $14+$15}' "/proc/$q/stat"))); done
  local reqs=$N
  if [ -n "${RATE:-}" ]; then # the same offered load for every topology
    local dur line
    dur=$(python3 -c "print('%.2fs' % ($N / $RATE))")
    line=$(taskset -c 1 "$work/loadgen" -addr "127.0.0.1:$p" -rate "$RATE" -pipeline "$PIPELINE" -conns 50 \
      -duration "$dur" -keys 100000 -cmd "$(echo "${cmd[*]}" | sed 's/k:__rand_int__/{k}/')")
    rps=$(echo "$line" | cut -d, -f3)
    reqs=$(python3 -c "print(round($rps * $N / $RATE))")
  else
    rps=$(taskset -c 1 redis-benchmark -p "$p" -c 50 -P "$PIPELINE" -n "$N" -r 100000 --csv "${cmd[@]}" |
      tail -1 | cut -d, -f2 | tr -d '"')
  fi
  cpu1=$(awk '{print $14+$15}' "/proc/$ppid/stat")
  for q in "${pids[@]:1}"; do rcpu1=$((rcpu1 + $(awk '{print $14+$15}' "/proc/$q/stat"))); done
  local lag=","
  if [ -n "$lagpid" ]; then
    wait "$lagpid"
    lag=$(cut -d, -f4,5 "$dir/lag")
  fi
  # The primary's CPU per request, and each replica's on average, in
  # microseconds (clock ticks of 10 ms).
  local us rus
  us=$(python3 -c "print('%.3f' % (($cpu1 - $cpu0) * 10000 / $reqs))")
  rus=$(python3 -c "print('%.3f' % (($rcpu1 - $rcpu0) * 10000 / $reqs / max($r, 1)))")
  echo "$label,$r,$round,$rps,$lag,$us,$rus" | tee -a "$results"
  stop_all
}

echo "server,replicas,round,rps,lag_p50_us,lag_p99_us,primary_cpu_us_per_request,replica_cpu_us_per_request"
for round in $(seq "$ROUNDS"); do
  for r in $REPLICAS; do
    run limitdb "$r" "$round"
    run redis "$r" "$round"
  done
  if [ "${AOF:-0}" = 1 ]; then
    run limitdb 0 "$round" --appendonly yes --appendfsync everysec
    run redis 0 "$round" --appendonly yes --appendfsync everysec
  fi
done

python3 - "$results" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
med = {}
lag = {}
cpu = {}
rcpu = {}
for kind, r, rnd, rps, p50, p99, us, rus in rows:
    med.setdefault((kind, int(r)), []).append(float(rps))
    cpu.setdefault((kind, int(r)), []).append(float(us))
    rcpu.setdefault((kind, int(r)), []).append(float(rus))
    if p50:
        lag.setdefault((kind, int(r)), []).append((int(p50), int(p99)))
m = {k: statistics.median(v) for k, v in med.items()}
print()
print("medians over %d rounds" % max(len(v) for v in med.values()))
for (kind, r), v in sorted(m.items()):
    extra = ""
    if (kind, r) in lag:
        ls = lag[(kind, r)]
        extra = "  lag p50 %d us, p99 %d us" % (statistics.median(x[0] for x in ls), statistics.median(x[1] for x in ls))
    if r:
        extra += ", each replica %.2f us CPU/request" % statistics.median(rcpu[(kind, r)])
    print("%-12s %d replicas: %9.0f req/s, primary %.2f us CPU/request%s" % (kind, r, v, statistics.median(cpu[(kind, r)]), extra))
for r in sorted({r for _, r in m}):
    if ("limitdb", r) in m and ("limitdb", 0) in m and r:
        print("limitdb %d replicas / none:      %.3f" % (r, m[("limitdb", r)] / m[("limitdb", 0)]))
        c = lambda k: statistics.median(cpu[k])
        print("limitdb primary CPU/request, none / %d replicas: %.3f" % (r, c(("limitdb", 0)) / c(("limitdb", r))))
        if ("redis", 0) in m and ("redis", r) in m:
            print("redis   primary CPU/request, none / %d replicas: %.3f" % (r, c(("redis", 0)) / c(("redis", r))))
    if ("redis", r) in m and ("redis", 0) in m and r:
        print("redis   %d replicas / none:      %.3f" % (r, m[("redis", r)] / m[("redis", 0)]))
    if ("limitdb", r) in m and ("redis", r) in m:
        print("limitdb / redis, %d replicas:    %.3f" % (r, m[("limitdb", r)] / m[("redis", r)]))
if ("limitdb+aof", 0) in m:
    print("limitdb appendfsync everysec / none: %.3f" % (m[("limitdb+aof", 0)] / m[("limitdb", 0)]))
if ("redis+aof", 0) in m:
    print("redis   appendfsync everysec / none: %.3f" % (m[("redis+aof", 0)] / m[("redis", 0)]))
    if ("limitdb+aof", 0) in m:
        print("limitdb / redis, both appendfsync everysec: %.3f" % (m[("limitdb+aof", 0)] / m[("redis+aof", 0)]))
PY

if [ "${FULLSYNC:-0}" = 1 ]; then
  echo
  echo "full resynchronisation of $KEYS keys (seconds from REPLICAOF to link up)"
  for kind in limitdb redis; do
    p=$(free_port); q=$(free_port)
    start "$kind" "$p" 0 "$work/fs-$kind/p" ""
    python3 - "$kind" "$KEYS" <<'PY' | redis-cli -p "$p" --pipe >/dev/null
import sys
kind, n = sys.argv[1], int(sys.argv[2])
out = sys.stdout.buffer
for i in range(n):
    k = b"k:%d" % i
    args = [b"CL.THROTTLE", k, b"99", b"1", b"3600"] if kind == "limitdb" else [b"SET", k, b"v"]
    out.write(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
PY
    start "$kind" "$q" 1 "$work/fs-$kind/r" ""
    t0=$(date +%s.%N)
    redis-cli -p "$q" REPLICAOF 127.0.0.1 "$p" >/dev/null
    linked "$q"
    t1=$(date +%s.%N)
    echo "$kind: $(python3 -c "print('%.2f' % ($t1 - $t0))") s, $(redis-cli -p "$q" DBSIZE) keys on the replica"
    stop_all
  done
fi
