#!/usr/bin/env bash
# ab.sh: two limitdb builds side by side on a pair of loads, in many short
# paired rounds: the instrument for a change worth a few percent on a
# machine whose speed drifts by more than that from one second to the next.
#
# Both builds run at once, pinned to the same core (redis-benchmark on the
# other). Each round runs, on A then on B, CMD and then CMD2 (by default
# CL.THROTTLE and SL.INCR on 100k random keys, 50 clients, pipeline 16),
# each from an empty keyspace unless GROW is set. A round's figures are
# taken seconds apart, so the drift mostly cancels in its ratios:
#
#   - each build's CMD2/CMD (the "every limiter within 80% of CL.THROTTLE"
#     goal), median over the rounds with a bootstrap 90% interval;
#   - B's CMD2/CMD over A's, per round: above 1 when B narrowed the gap;
#   - B's CMD2 req/s over A's, per round.
#
#   bench/ab.sh /tmp/limitdb-before /tmp/limitdb-after      30 rounds
#   ROUNDS=80 bench/ab.sh A B
#   GROW=1 ROUNDS=50 bench/ab.sh A B    keys keep their state from round to
#                                       round: sliding logs fill, then slide
#   KEYS=10000 N=300000 bench/ab.sh A B
#   CMD='TB.TAKE k:__rand_int__ 100 100 60' CMD2='SW.INCR s:__rand_int__ 100 60' bench/ab.sh A B
#   PREFILL=3000000 KEYS=3000000 CMD='INCR k:__rand_int__' CMD2='GET k:__rand_int__' bench/ab.sh A B
#                                       a keyspace far larger than the cache:
#                                       PREFILL INCRs on random keys of KEYS on
#                                       each build first, kept (GROW)
#   B_ARGS='--appendonly yes --appendfsync everysec' bench/ab.sh L L
#                                       one build with and without a setting
#                                       (A_ARGS, B_ARGS: flags for each side)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 2 ]; then
  echo "usage: bench/ab.sh LIMITDB_BIN_A LIMITDB_BIN_B" >&2
  exit 2
fi
A=$1 B=$2
ROUNDS=${ROUNDS:-30}
N=${N:-300000}
KEYS=${KEYS:-100000}
CMD=${CMD:-"CL.THROTTLE k:__rand_int__ 99 100 60"}
CMD2=${CMD2:-"SL.INCR s:__rand_int__ 100 60"}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

for tool in redis-cli redis-benchmark taskset python3; do
  command -v "$tool" >/dev/null || { echo "ab.sh: $tool is required" >&2; exit 1; }
done

# shellcheck source=bench/lib.sh
. bench/lib.sh

pa=$(free_port)
# shellcheck disable=SC2086
taskset -c "$SERVER_CPU" "$A" --port "$pa" --dir "$work/a" --save 0 ${A_ARGS:-} >"$work/a.log" 2>&1 &
pids+=($!)
pb=$(free_port)
# shellcheck disable=SC2086
taskset -c "$SERVER_CPU" "$B" --port "$pb" --dir "$work/b" --save 0 ${B_ARGS:-} >"$work/b.log" 2>&1 &
pids+=($!)
wait_ready "$pa"
wait_ready "$pb"

# rps PORT COMMAND...: one redis-benchmark run's req/s
rps() {
  local port=$1
  shift
  [ -z "${GROW:-}" ] && redis-cli -p "$port" FLUSHALL >/dev/null
  # shellcheck disable=SC2068
  taskset -c "$CLIENT_CPU" redis-benchmark -p "$port" -c 50 -P 16 -n "$N" -r "$KEYS" --csv $@ |
    tail -n 1 | cut -d, -f2 | tr -d '"'
}

if [ -n "${PREFILL:-}" ]; then
  GROW=1
  for port in "$pa" "$pb"; do
    taskset -c "$CLIENT_CPU" redis-benchmark -p "$port" -c 50 -P 64 -n "$PREFILL" -r "$KEYS" --csv INCR k:__rand_int__ >/dev/null
  done
fi

rows=$work/rows
for r in $(seq "$ROUNDS"); do
  for side in a b; do
    port=$pa
    [ "$side" = b ] && port=$pb
    # shellcheck disable=SC2086
    c=$(rps "$port" $CMD)
    # shellcheck disable=SC2086
    s=$(rps "$port" $CMD2)
    echo "$r $side $c $s" >>"$rows"
    printf 'round %d %s: %s %s req/s, %s\n' "$r" "$side" "${CMD%% *}" "$c" "$s" >&2
  done
done

python3 - "$rows" "${CMD%% *}" "${CMD2%% *}" <<'PY'
import random, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
cmd, cmd2 = sys.argv[2], sys.argv[3]
by = {(r, side): (float(c), float(s)) for r, side, c, s in rows}
rounds = sorted({r for r, _ in by}, key=int)
ratio = {side: [by[r, side][1] / by[r, side][0] for r in rounds] for side in "ab"}
random.seed(1)

def interval(x):
    m = sorted(statistics.median(random.choices(x, k=len(x))) for _ in range(4000))
    return m[200], m[3800]

def line(name, x):
    lo, hi = interval(x)
    print(f"  {name:28} median {statistics.median(x):.3f}  90% interval {lo:.2f}-{hi:.2f}"
          f"  above 1 in {sum(v > 1 for v in x)} of {len(x)}")

print(f"over {len(rounds)} rounds:")
for side in "ab":
    lo, hi = interval(ratio[side])
    c = statistics.median(by[r, side][0] for r in rounds)
    s = statistics.median(by[r, side][1] for r in rounds)
    print(f"  {side.upper()}: {cmd2}/{cmd} median {statistics.median(ratio[side]):.3f} (90% interval {lo:.2f}-{hi:.2f});"
          f" medians {cmd} {c:.0f}, {cmd2} {s:.0f} req/s")
line(f"B/A of {cmd2}/{cmd}", [b / a for a, b in zip(ratio["a"], ratio["b"])])
line(f"B/A of {cmd2} req/s", [by[r, "b"][1] / by[r, "a"][1] for r in rounds])
line(f"B/A of {cmd} req/s", [by[r, "b"][0] / by[r, "a"][0] for r in rounds])
PY
