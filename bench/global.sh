#!/usr/bin/env bash
# Global policies (docs/global.md), four figures:
#  1. RL.HIT through a global policy vs a local one on the same node, same
#     run, pipelined through the real connection loop (node's
#     BenchmarkPolicyHit, CPU time per hit): goal >= 0.9x throughput.
#  2. Sync bytes one region sends one peer per second at the default 50 ms
#     interval when 100k keys change every interval (BenchmarkSyncBytes).
#  3. Over-admission against the reported bound, per load shape, three
#     regions through delaying proxies at 40/80/150 ms RTT
#     (tests' TestGlobalPolicyAdmitsWithinTheBound, its log lines).
#  4. Admission latency in a region (p50, p99 of RL.HIT, open loop) for a
#     global policy vs a local one, three limitdb processes linked through
#     bench/delayproxy at 40/80/150 ms RTT, the peers sending their own
#     load of the global policy meanwhile: goal p99 within 10%.
#
#   bench/global.sh            # ROUNDS=5 by default; ROUNDS=1 to smoke-run
#   RATE=5000 DURATION=3s      # figure 4's load on the measured region
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ROUNDS=${ROUNDS:-5}
N=${N:-300000}
RATE=${RATE:-5000}
DURATION=${DURATION:-3s}
go test -c -o "$work/node.test" ./node
go test -c -o "$work/region.test" ./region

for ((r = 0; r < ROUNDS; r++)); do
  (cd node && "$work/node.test" -test.run '^$' -test.bench 'PolicyHit' -test.benchtime "${N}x" -test.cpu 1)
done | tee "$work/hit.txt" | grep -E '^Benchmark' >/dev/null || true

python3 - "$work/hit.txt" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r'BenchmarkPolicyHit/(\S+)/(local|global)/(\S+?)\s+\d+\s+[\d.]+ ns/op\s+([\d.]+) cpu-ns/op', line)
    if m:
        runs.setdefault((m.group(1), m.group(3), m.group(2)), []).append(float(m.group(4)))
print("| algorithm | keys | local cpu-ns/hit | global cpu-ns/hit | global/local throughput |")
print("|---|---|---|---|---|")
for alg, keys in sorted({(a, k) for a, k, _ in runs}):
    l, g = statistics.median(runs[(alg, keys, "local")]), statistics.median(runs[(alg, keys, "global")])
    print(f"| {alg} | {keys} | {l:.0f} | {g:.0f} | {l/g:.2f}x |")
PY

(cd region && "$work/region.test" -test.run '^$' -test.bench 'SyncBytes' -test.benchtime 3x) | grep -E '^Benchmark'

echo
echo "over-admission per shape (limit 200 per 1 s window, a client at 2x):"
go test ./tests/ -run 'TestGlobalPolicyAdmitsWithinTheBound' -count=1 -v 2>&1 | grep -E 'admitted [0-9]+ over' | sed 's/^ *global_test.go:[0-9]*: /  /'

# Figure 4: three regions as processes, linked through delaying proxies.
go build -o "$work/limitdb" ./cmd/limitdb
go build -o "$work/loadgen" ./bench/loadgen
go build -o "$work/delayproxy" ./bench/delayproxy
names=(eu us ap)
declare -A port rtt
rtt[eu-us]=40 rtt[us-eu]=40 rtt[eu-ap]=80 rtt[ap-eu]=80 rtt[us-ap]=150 rtt[ap-us]=150
for n in "${names[@]}"; do port[$n]=$(free_port); done
declare -A peers
for from in "${names[@]}"; do
  for to in "${names[@]}"; do
    [[ $from == "$to" ]] && continue
    pp=$(free_port)
    "$work/delayproxy" -listen "127.0.0.1:$pp" -target "127.0.0.1:${port[$to]}" -delay "$((rtt[$from-$to] / 2))ms" &
    pids+=($!)
    peers[$from]+=" --region-peer $to=127.0.0.1:$pp"
  done
done
for n in "${names[@]}"; do
  mkdir -p "$work/$n"
  # shellcheck disable=SC2086
  taskset -c 0 "$work/limitdb" --port "${port[$n]}" --dir "$work/$n" --save 0 --region "$n" ${peers[$n]} >"$work/$n/log" 2>&1 &
  pids+=($!)
done
for n in "${names[@]}"; do
  wait_ready "${port[$n]}"
  # Limits no run reaches: every request is decided and written.
  redis-cli -p "${port[$n]}" RL.POLICY SET g fixed_window 1000000000 60s SCOPE global >/dev/null
  redis-cli -p "${port[$n]}" RL.POLICY SET loc fixed_window 1000000000 60s >/dev/null
done
for n in us ap; do # the peers' own load of the global policy: eu hears it
  taskset -c 1 "$work/loadgen" -addr "127.0.0.1:${port[$n]}" -rate 1000 -conns 4 -duration 1h -cmd 'RL.HIT g {k}' -keys 100000 >/dev/null 2>&1 &
  pids+=($!)
done
load() { # policy label
  taskset -c 1 "$work/loadgen" -addr "127.0.0.1:${port[eu]}" -rate "$RATE" -conns 20 -duration "$DURATION" \
    -cmd "RL.HIT $1 {k}" -keys 100000 -label "$2"
}
load loc warmup >/dev/null
: >"$work/lat.csv"
for ((r = 0; r < ROUNDS; r++)); do
  load loc local >>"$work/lat.csv"
  load g global >>"$work/lat.csv"
done
echo
echo "admission latency in eu at $RATE RL.HIT/s (peers at 40 and 80 ms RTT, us-ap 150 ms), medians of $ROUNDS rounds:"
python3 - "$work/lat.csv" <<'PY'
import csv, statistics, sys
rows = {}
for r in csv.reader(open(sys.argv[1])):
    if len(r) >= 5 and r[0] in ("local", "global"):
        rows.setdefault(r[0], []).append((float(r[3]), float(r[4])))
print("| policy | p50 us | p99 us |")
print("|---|---|---|")
for k in ("local", "global"):
    print(f"| {k} | {statistics.median(a for a, _ in rows[k]):.0f} | {statistics.median(b for _, b in rows[k]):.0f} |")
l, g = statistics.median(b for _, b in rows["local"]), statistics.median(b for _, b in rows["global"])
print(f"global p99 / local p99: {g/l:.2f}")
PY
redis-cli -p "${port[eu]}" INFO regions | grep -E '^peer_' | sed 's/^/  /'
