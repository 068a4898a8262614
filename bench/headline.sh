#!/usr/bin/env bash
# headline.sh: the headline ratio, with where the time went.
#
# Runs the pair of commands of the CL.THROTTLE-per-core goal
# (bench/README.md) in alternating rounds: limitdb's CL.THROTTLE on 100k
# random keys against redis-server's INCR, 50 clients, pipeline 16, each
# server pinned to core 0 and redis-benchmark to core 1. Besides req/s and
# their ratio it prints, for each run, the CPU the server and
# redis-benchmark used (a share of one core: a server under 100% was not the
# bottleneck) and the server's context switches per 1000 requests (all its
# threads, from /proc), and the p99 latency redis-benchmark saw; "p99
# redis/limitdb" at or above 1 means limitdb's p99 was no worse than
# Redis's. At the end it prints each ratio's median over the rounds with how
# far that median can be trusted (a bootstrap 90% interval, and a sign test
# of the rounds above and below 1), and each server's median req/s and p99.
#
#   bench/headline.sh                   3 rounds of 2M requests
#   ROUNDS=15 N=300000 bench/headline.sh   many short rounds: on a machine whose
#                                       speed drifts, the median of each round's
#                                       ratio (printed last) is the figure
#   LIMITDB_BIN=/tmp/limitdb-old bench/headline.sh
#   BEFORE_BIN=/tmp/limitdb-old bench/headline.sh   adds that binary's rows to each round
#   BEFORE_ARGS='--event-loop no' bench/headline.sh
#                                       "before" is the same binary with these flags
#   CMD='TB.TAKE k:__rand_int__ 100 100 60' bench/headline.sh
#   PIPELINE=1 bench/headline.sh        (default 16)
#   CMD2='SL.INCR k:__rand_int__ 100 60' bench/headline.sh
#                                       also runs CMD2 on the same limitdb in each
#                                       round and prints its ratio to CMD: the
#                                       "every limiter within 80%" goal, paired
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
N=${N:-2000000}
CMD=${CMD:-"CL.THROTTLE k:__rand_int__ 99 1000 60"}
PIPELINE=${PIPELINE:-16}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

for tool in redis-server redis-cli redis-benchmark taskset python3; do
  command -v "$tool" >/dev/null || { echo "headline.sh: $tool is required" >&2; exit 1; }
done
[ -r /proc/self/stat ] || { echo "headline.sh: needs Linux /proc" >&2; exit 1; }

# shellcheck source=bench/lib.sh
. bench/lib.sh

if [ -z "${LIMITDB_BIN:-}" ]; then
  LIMITDB_BIN=$work/limitdb-server
  go build -o "$LIMITDB_BIN" ./cmd/limitdb
fi
if [ -n "${BEFORE_ARGS:-}" ] && [ -z "${BEFORE_BIN:-}" ]; then
  BEFORE_BIN=$LIMITDB_BIN
fi

lport=$(free_port)
taskset -c "$SERVER_CPU" "$LIMITDB_BIN" --port "$lport" --dir "$work/limitdb" --save 0 >"$work/limitdb.log" 2>&1 &
lpid=$!; pids+=($lpid)
bport=; bpid=
if [ -n "${BEFORE_BIN:-}" ]; then
  bport=$(free_port)
  # shellcheck disable=SC2086
  taskset -c "$SERVER_CPU" "$BEFORE_BIN" --port "$bport" --dir "$work/before" --save 0 ${BEFORE_ARGS:-} >"$work/before.log" 2>&1 &
  bpid=$!; pids+=($bpid)
fi
rport=$(free_port)
taskset -c "$SERVER_CPU" redis-server --port "$rport" --save '' --appendonly no >"$work/redis.log" 2>&1 &
rpid=$!; pids+=($rpid)
for p in $lport $bport $rport; do wait_ready "$p"; done

ticks() { # pid -> utime+stime of all its threads, in clock ticks
  awk '{print $14+$15}' "/proc/$1/stat"
}
switches() {
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/{s+=$2} END{print s+0}'
}

# run <name> <port> <pid> <benchmark args...>: prints "name req/s server% client% switches/1k"
run() {
  local name=$1 port=$2 pid=$3; shift 3
  local s0 w0 t0 s1 w1 t1 out
  s0=$(ticks "$pid"); w0=$(switches "$pid"); t0=$(date +%s.%N)
  taskset -c "$CLIENT_CPU" bash -c 'redis-benchmark "$@" > "'"$work"'/out"; cat /proc/$$/stat > "'"$work"'/client"' _ \
    -p "$port" -c 50 -P "$PIPELINE" -r 100000 -n "$N" --csv "$@" 2>/dev/null
  s1=$(ticks "$pid"); w1=$(switches "$pid"); t1=$(date +%s.%N)
  out=$(tail -1 "$work/out")
  python3 - "$name" "$out" "$s0" "$s1" "$w0" "$w1" "$t0" "$t1" "$N" "$work/client" <<'PY'
import re, sys, os
name, out, s0, s1, w0, w1, t0, t1, n, client = sys.argv[1:]
hz = os.sysconf('SC_CLK_TCK')
secs = float(t1) - float(t0)
# the CSV row: "test","rps","avg","min","p50","p95","p99","max" (ms)
row = [x.strip('"') for x in out.split('","')]
rps, p99 = float(row[1]), float(row[6])
f = open(client).read().split()
# the bash wrapper's children: cutime + cstime (fields 16, 17) are redis-benchmark's CPU
cl = (int(f[15]) + int(f[16])) / hz
print(f"{name:9} {rps:10.0f} req/s  p99 {p99:6.3f} ms  server {100*(int(s1)-int(s0))/hz/secs:4.0f}% of a core"
      f"  client {100*cl/secs:4.0f}%  switches/1k req {1000*(int(w1)-int(w0))/int(n):5.2f}")
PY
}

: >"$work/ratios"; : >"$work/rows"
for r in $(seq "$ROUNDS"); do
  echo "round $r (load $(cut -d' ' -f1 /proc/loadavg))"
  # shellcheck disable=SC2086
  a=$(run limitdb "$lport" "$lpid" $CMD); echo "  $a"
  bef=
  if [ -n "$bport" ]; then
    # shellcheck disable=SC2086
    bef=$(run before "$bport" "$bpid" $CMD); echo "  $bef"
  fi
  two=
  if [ -n "${CMD2:-}" ]; then
    # shellcheck disable=SC2086
    two=$(run cmd2 "$lport" "$lpid" $CMD2); echo "  $two"
  fi
  b=$(run redis "$rport" "$rpid" -t incr); echo "  $b"
  printf '%s\n' "$a" "$bef" "$two" "$b" | grep . >>"$work/rows"
  python3 - "$a" "$b" "$bef" "$two" <<'PY' | tee -a "$work/ratios"
import sys
rps = lambda line: float(line.split()[1]) if line else None
p99 = lambda line: float(line.split()[4]) if line else None
a, b, bef, two = (rps(x) for x in sys.argv[1:])
print(f"  ratio limitdb/redis INCR {a/b:.2f}" + (f"  before/redis {bef/b:.2f}  limitdb/before {a/bef:.2f}" if bef else "")
      + (f"  cmd2/cmd {two/a:.2f}" if two else "")
      + f"  p99 redis/limitdb {p99(sys.argv[2]) / p99(sys.argv[1]):.2f}")
PY
done
python3 - "$work/ratios" "$work/rows" <<'PY'
import math, random, re, statistics, sys
rows = [dict((k, float(v)) for k, v in re.findall(r'([\w/ ]+?) ([\d.]+)', l.replace('ratio ', '')))
        for l in open(sys.argv[1]) if l.strip()]
# Each server's median req/s and p99 over the rounds.
runs = {}
for l in open(sys.argv[2]):
    f = l.split()
    runs.setdefault(f[0], []).append((float(f[1]), float(f[4])))
print("medians per server:", "  ".join(
    f"{n} {statistics.median(r for r, _ in v):.0f} req/s p99 {statistics.median(p for _, p in v):.3f} ms"
    for n, v in runs.items()))
# How sure the medians are: a bootstrap 90% interval of each ratio's
# median over the rounds, and in how many rounds the ratio was at least 1
# with a two-sided sign test of "as likely above 1 as below" (a small p
# says the servers differ; a large one, that this run cannot tell them
# apart).
print("median over %d rounds:" % len(rows))
rnd = random.Random(1)
def sign_p(k, n):
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2 ** n
    return min(1.0, 2 * tail)
for k in rows[0]:
    xs = [r[k] for r in rows]
    meds = sorted(statistics.median(rnd.choices(xs, k=len(xs))) for _ in range(2000))
    up = sum(x >= 1 for x in xs)
    print(f"  {k.strip():24} median {statistics.median(xs):.2f}  90% interval {meds[100]:.2f}-{meds[1899]:.2f}"
          f"  at or above 1 in {up} of {len(xs)} rounds (sign test p={sign_p(up, len(xs)):.2f})")
PY
