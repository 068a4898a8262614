#!/usr/bin/env bash
# analytics.sh: what recording every limiter decision's key (the top
# limited keys of RL.TOP and the per-second history of RL.HISTORY) costs
# CL.THROTTLE, as the ratio of analytics on to analytics off in the same
# run; the goal is at least 0.95.
#
# Two instruments, both on one build of this tree:
#
#   server  bench/ab.sh's paired rounds on two processes of the same binary,
#           A with --analytics no and B with --analytics yes, each pinned to
#           the same core: CMD (CL.THROTTLE on KEYS random keys) and CMD2 (an
#           RL.HIT of a GCRA policy of a rules file, recorded twice: under
#           the policy and under the command). "B/A of CL.THROTTLE req/s" is
#           the figure.
#   go      node's BenchmarkAnalytics (CL.THROTTLE and RL.HIT through the
#           real connection loop, depth 16, on 100k random keys and one hot
#           key), off and on interleaved ROUNDS times: the median cpu-ns/op
#           of each and their ratio, off/on (above 0.95 is the goal).
#
#   bench/analytics.sh                    both, ROUNDS=20
#   MODE=server ROUNDS=40 bench/analytics.sh
#   MODE=go ROUNDS=10 bench/analytics.sh
#   KEYS=1 MODE=server bench/analytics.sh  one hot key
#   N=20000 ROUNDS=2 bench/analytics.sh    a smoke run: seconds, not a figure
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${MODE:-both}
ROUNDS=${ROUNDS:-20}
BENCHTIME=${BENCHTIME:-200000x}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "$MODE" = server ] || [ "$MODE" = both ]; then
  cat >"$tmp/rules.yaml" <<'EOF'
policies:
  - name: bench
    algorithm: gcra
    limit: 100
    period: 1m
EOF
  go build -o "$tmp/limitdb" ./cmd/limitdb
  echo "== server: A analytics no, B analytics yes (B/A of CL.THROTTLE req/s is the ratio)"
  A_ARGS="--analytics no --rules $tmp/rules.yaml" B_ARGS="--analytics yes --rules $tmp/rules.yaml" \
    CMD=${CMD:-"CL.THROTTLE k:__rand_int__ 99 100 60"} CMD2=${CMD2:-"RL.HIT bench u:__rand_int__"} \
    ROUNDS=$ROUNDS bench/ab.sh "$tmp/limitdb" "$tmp/limitdb"
fi

if [ "$MODE" = go ] || [ "$MODE" = both ]; then
  go test -c -o "$tmp/node.test" ./node
  echo "== go: BenchmarkAnalytics, off and on interleaved, $ROUNDS rounds of $BENCHTIME"
  for ((r = 0; r < ROUNDS; r++)); do
    for on in false true; do
      (cd node && "$tmp/node.test" -test.run '^$' -test.bench "Analytics/.*/.*/analytics=$on\$" \
        -test.benchtime "$BENCHTIME" -test.cpu 1)
    done
  done | awk '/^BenchmarkAnalytics/ { for (i = 1; i <= NF; i++) if ($i == "cpu-ns/op") print $1, $(i-1) }' |
    python3 -c '
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in sys.stdin:
    name, ns = line.split()
    runs[name].append(float(ns))
loads = sorted({n.rsplit("/", 1)[0] for n in runs})
for load in loads:
    off, on = runs[load + "/analytics=false"], runs[load + "/analytics=true"]
    if not off or not on:
        continue
    mo, mn = statistics.median(off), statistics.median(on)
    short = load.split("/", 1)[1]
    print(f"{short:22} off {mo:7.1f}  on {mn:7.1f} cpu-ns/op (medians of {len(off)})  off/on {mo / mn:.3f}")
'
fi
