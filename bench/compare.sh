#!/usr/bin/env bash
# compare.sh: limitdb and redis-server side by side, same machine, same run.
#
# Starts limitdb and redis-server on free loopback ports and drives both with
# redis-benchmark: 50 clients, pipeline 1 and 16, 100k random keys and one
# hot key. Prints req/s, p50, p99 and the ratios limitdb/Redis, and writes
# every figure as CSV under bench/results/. See bench/README.md.
#
#   bench/compare.sh                    single core: each server pinned to one
#                                       core, redis-benchmark to the other
#   MODE=multi bench/compare.sh         limitdb with GOMAXPROCS=1 and 2, two
#                                       redis-benchmark clients at once
#   MODE=latency bench/compare.sh       fixed offered load (bench/loadgen):
#                                       p50, p99, p99.9 at each of RATES
#
# Environment:
#   LIMITDB_BIN   a prebuilt limitdb to measure (default: build this tree)
#   BEFORE_BIN    another limitdb (say, main before a change) measured in the
#                 same run as "before": the before/after table of one run
#   N, N1         requests per load at pipeline 16 and 1 (default 400000, 100000)
#   PIPELINES     default "1 16";  KEYSETS default "rand hot"
#   LOADS         only run loads whose name matches this regex
#   REPEAT        runs of every load (default 1); each run is its own CSV row
#   SERVER_CPU, CLIENT_CPU   cores for pinning (default 0 and 1)
#   REDIS_CELL    path of libredis_cell.so to load into redis-server
#   RATES         MODE=latency: offered loads in req/s (default "10000 30000")
#   DURATION      MODE=latency: seconds per figure (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${MODE:-single}
N=${N:-400000}
N1=${N1:-100000}
PIPELINES=${PIPELINES:-"1 16"}
KEYSETS=${KEYSETS:-"rand hot"}
LOADS=${LOADS:-.}
REPEAT=${REPEAT:-1}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
CLIENTS=50
KEYSPACE=100000

for tool in redis-server redis-cli redis-benchmark taskset python3; do
  command -v "$tool" >/dev/null || { echo "compare.sh: $tool is required" >&2; exit 1; }
done

# shellcheck source=bench/lib.sh
. bench/lib.sh
declare -A pid_of # port -> server pid

if [[ -z "${LIMITDB_BIN:-}" ]]; then
  LIMITDB_BIN=$work/limitdb
  go build -o "$LIMITDB_BIN" ./cmd/limitdb
fi

# pin CPU COMMAND...: becomes COMMAND, pinned to CPU in single mode and free
# in multi mode. Call it in a subshell, "(pin ...) &", so that $! is the
# command itself and cleanup can kill it.
pin() {
  local cpu=$1
  shift
  if [[ $MODE != multi ]]; then exec taskset -c "$cpu" "$@"; else exec "$@"; fi
}

start_limitdb() { # gomaxprocs -> sets LIMITDB_PORT
  LIMITDB_PORT=$(free_port)
  mkdir -p "$work/data-$LIMITDB_PORT"
  (GOMAXPROCS=$1 pin "$SERVER_CPU" "$LIMITDB_BIN" --port "$LIMITDB_PORT" --dir "$work/data-$LIMITDB_PORT" \
    2>"$work/limitdb-$LIMITDB_PORT.log") &
  pids+=($!)
  pid_of[$LIMITDB_PORT]=$!
  wait_ready "$LIMITDB_PORT"
}

start_redis() { # -> sets REDIS_PORT
  REDIS_PORT=$(free_port)
  local extra=()
  if [[ -n "${REDIS_CELL:-}" && -f "${REDIS_CELL:-}" ]]; then extra=(--loadmodule "$REDIS_CELL"); fi
  (pin "$SERVER_CPU" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" "${extra[@]}" >"$work/redis.log" 2>&1) &
  pids+=($!)
  pid_of[$REDIS_PORT]=$!
  wait_ready "$REDIS_PORT"
}

stamp=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p bench/results
csv=bench/results/compare-$MODE-$stamp.csv
echo "mode,run,pipeline,keys,server,load,rps,p50_ms,p99_ms,cpu_us" >"$csv"


# bench SERVER LOAD PORT PIPELINE KEYS RUN COMMAND... : one redis-benchmark
# run per client (two in multi mode, at once), one CSV row.
bench() {
  local server=$1 load=$2 port=$3 pipe=$4 keys=$5 run=$6
  shift 6
  local n=$N
  [[ $pipe == 1 ]] && n=$N1
  local rflag=()
  [[ $keys == rand ]] && rflag=(-r "$KEYSPACE")
  local nclients=1
  [[ $MODE == multi ]] && nclients=2
  redis-cli -p "$port" FLUSHALL >/dev/null
  local outs=() c p t0
  t0=$(cpu_ticks "${pid_of[$port]}")
  for c in $(seq "$nclients"); do
    (pin "$CLIENT_CPU" redis-benchmark -p "$port" -c "$CLIENTS" -P "$pipe" -n "$n" "${rflag[@]}" --csv "$@" \
      >"$work/out-$c" 2>"$work/err-$c") &
    outs+=($!)
  done
  for p in "${outs[@]}"; do wait "$p"; done
  local cpu
  cpu=$(awk -v t="$(($(cpu_ticks "${pid_of[$port]}") - t0))" -v hz="$hz" -v n="$((n * nclients))" \
    'BEGIN {printf "%.3f", t / hz * 1e6 / n}')
  # sum the clients' req/s; report the worse of their percentiles
  local row
  row=$(for c in $(seq "$nclients"); do tail -n 1 "$work/out-$c"; done | tr -d '"' |
    awk -F, '{rps += $2; if ($5 > p50) p50 = $5; if ($7 > p99) p99 = $7} END {printf "%.0f,%.3f,%.3f", rps, p50, p99}')
  row="$row,$cpu"
  echo "$MODE,$run,$pipe,$keys,$server,$load,$row" >>"$csv"
  printf '  %-10s %-12s P=%-2s %-4s %s\n' "$server" "$load" "$pipe" "$keys" "$row" >&2
}

# available PORT COMMAND...: false when the server does not know the command
available() {
  local port=$1
  shift
  ! redis-cli -p "$port" "$@" 2>&1 | grep -qi "unknown command"
}

# jobs holds "server|port|load|command" lines; {k} in the command becomes a
# random or hot key with a per-load prefix.
jobs=()
add_jobs() { # server port loads...
  local server=$1 port=$2 spec name cmd
  shift 2
  for spec in "$@"; do
    name=${spec%%|*}
    cmd=${spec#*|}
    [[ $name =~ $LOADS ]] || continue
    # shellcheck disable=SC2086
    if ! available "$port" ${cmd//\{k\}/probe:$name}; then
      echo "  $server $name: not available (unknown command), skipped" >&2
      echo "$MODE,0,-,-,$server,$name,not available,," >>"$csv"
      continue
    fi
    jobs+=("$server|$port|$name|$cmd")
  done
}

limitdb_loads=(
  "INCR|INCR {k}"
  "CL.THROTTLE|CL.THROTTLE {k} 99 100 60"
  "TB.TAKE|TB.TAKE {k} 100 100 60"
  "SW.INCR|SW.INCR {k} 100 60"
  "SL.INCR|SL.INCR {k} 100 60"
)

echo "compare.sh: mode $MODE, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(redis-server --version | cut -d' ' -f3)" >&2

start_redis
gcra=$(redis-cli -p "$REDIS_PORT" SCRIPT LOAD "$(cat bench/lua/gcra.lua)")
slog=$(redis-cli -p "$REDIS_PORT" SCRIPT LOAD "$(cat bench/lua/slog.lua)")
redis_loads=(
  "INCR|INCR {k}"
  "lua-gcra|EVALSHA $gcra 1 {k} 99 100 60"
  "lua-slog|EVALSHA $slog 1 {k} 100 60"
)
if redis-cli -p "$REDIS_PORT" MODULE LIST | grep -q redis-cell; then
  redis_loads+=("redis-cell|CL.THROTTLE {k} 99 100 60")
else
  echo "  redis-cell: not available (set REDIS_CELL=/path/libredis_cell.so to load it)" >&2
  echo "$MODE,0,-,-,redis,redis-cell,not available,," >>"$csv"
fi
add_jobs redis "$REDIS_PORT" "${redis_loads[@]}"

if [[ $MODE != multi ]]; then
  if [[ -n "${BEFORE_BIN:-}" ]]; then
    after=$LIMITDB_BIN
    LIMITDB_BIN=$BEFORE_BIN
    start_limitdb 1
    add_jobs before "$LIMITDB_PORT" "${limitdb_loads[@]}"
    LIMITDB_BIN=$after
  fi
  start_limitdb 1
  add_jobs limitdb "$LIMITDB_PORT" "${limitdb_loads[@]}"
else
  start_limitdb 1
  add_jobs limitdb-1p "$LIMITDB_PORT" "${limitdb_loads[@]}"
  start_limitdb 2
  add_jobs limitdb-2p "$LIMITDB_PORT" "${limitdb_loads[@]}"
fi

if [[ $MODE == latency ]]; then
  go build -o "$work/loadgen" ./bench/loadgen
  lcsv=bench/results/latency-$stamp.csv
  echo "run,server,label,rate,achieved,p50_us,p99_us,p999_us,max_us,errors" >"$lcsv"
  for run in $(seq "$REPEAT"); do
    for rate in ${RATES:-10000 30000}; do
      for job in "${jobs[@]}"; do
        IFS='|' read -r server port name cmd <<<"$job"
        redis-cli -p "$port" FLUSHALL >/dev/null
        # shellcheck disable=SC2086
        row=$(taskset -c "$CLIENT_CPU" "$work/loadgen" -addr "127.0.0.1:$port" -rate "$rate" \
          -duration "${DURATION:-5}s" -label "$name" -cmd "$cmd" -keys "$KEYSPACE")
        echo "$run,$server,$row" >>"$lcsv"
        printf '  %-10s %s\n' "$server" "$row" >&2
      done
    done
  done
  echo
  column -s, -t "$lcsv"
  echo
  # Each figure's median over the runs, and in how many runs each limitdb
  # load's p99 was at or below Redis INCR's at the same rate (same run).
  python3 - "$lcsv" <<'PY'
import csv, statistics, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1])))
by = defaultdict(list)
for r in rows:
    by[(int(r['rate']), r['server'], r['label'])].append(r)
redis = {(int(r['rate']), r['run']): float(r['p99_us']) for r in rows if r['server'] == 'redis' and r['label'] == 'INCR'}
print("medians over runs (us):")
for (rate, server, label), rs in sorted(by.items()):
    med = lambda c: statistics.median(float(r[c]) for r in rs)
    line = f"  {rate:>6} {server:8} {label:12} p50 {med('p50_us'):9.1f}  p99 {med('p99_us'):9.1f}  p99.9 {med('p999_us'):9.1f}"
    pairs = [(float(r['p99_us']), redis[(rate, r['run'])]) for r in rs if (rate, r['run']) in redis]
    if server != 'redis' and pairs:
        line += f"  p99 <= Redis INCR's in {sum(a <= b for a, b in pairs)} of {len(pairs)} runs"
    print(line)
PY
  echo
  echo "CSV: $lcsv"
  exit 0
fi

# Every server's loads for one (pipeline, keys) run back to back, so that
# the ratios compare figures taken seconds apart on a machine whose other
# load comes and goes.
for run in $(seq "$REPEAT"); do
  for pipe in $PIPELINES; do
    for keys in $KEYSETS; do
      for job in "${jobs[@]}"; do
        IFS='|' read -r server port name cmd <<<"$job"
        key="$name:hot"
        [[ $keys == rand ]] && key="$name:__rand_int__"
        # shellcheck disable=SC2086
        bench "$server" "$name" "$port" "$pipe" "$keys" "$run" ${cmd//\{k\}/$key}
      done
    done
  done
done

echo
bench/report.sh "$csv"
echo
echo "CSV: $csv"
