#!/usr/bin/env bash
# Global policies (docs/global.md), three figures:
#  1. RL.HIT through a global policy vs a local one on the same store, same
#     run (region's BenchmarkHit, CPU time per hit): goal >= 0.9x throughput.
#  2. Sync bytes one region sends one peer per second at the default 50 ms
#     interval when 100k keys change every interval (BenchmarkSyncBytes).
#  3. Over-admission against the reported bound, per load shape, three
#     regions through delaying proxies at 40/80/150 ms RTT
#     (tests' TestGlobalPolicyAdmitsWithinTheBound, its log lines).
#
#   bench/global.sh            # ROUNDS=5 by default; ROUNDS=1 to smoke-run
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
N=${N:-300000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/region.test" ./region

for ((r = 0; r < ROUNDS; r++)); do
  (cd region && "$tmp/region.test" -test.run '^$' -test.bench 'Hit' -test.benchtime "${N}x" -test.cpu 1)
done | tee "$tmp/hit.txt" | grep -E '^Benchmark' >/dev/null || true

python3 - "$tmp/hit.txt" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r'BenchmarkHit/(\S+)/(local|global)\s+\d+\s+([\d.]+) ns/op', line)
    if m:
        runs.setdefault((m.group(1), m.group(2)), []).append(float(m.group(3)))
print("| algorithm | local ns/hit | global ns/hit | global/local throughput |")
print("|---|---|---|---|")
for alg in sorted({a for a, _ in runs}):
    l, g = statistics.median(runs[(alg, "local")]), statistics.median(runs[(alg, "global")])
    print(f"| {alg} | {l:.0f} | {g:.0f} | {l/g:.2f}x |")
PY

(cd region && "$tmp/region.test" -test.run '^$' -test.bench 'SyncBytes' -test.benchtime 3x) | grep -E '^Benchmark'

echo
echo "over-admission per shape (limit 200 per 1 s window, a client at 2x):"
go test ./tests/ -run 'TestGlobalPolicyAdmitsWithinTheBound' -count=1 -v 2>&1 | grep -E 'admitted [0-9]+ over' | sed 's/^ *global_test.go:[0-9]*: /  /'
