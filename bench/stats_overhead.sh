#!/usr/bin/env bash
# What INFO limits, the slow log, the MULTI gate and the transaction check
# of the shard locks cost a CL.THROTTLE: the same Go micro-benchmarks built twice, from
# this tree and from a copy with those four hunks removed, run interleaved
# ROUNDS times and compared by CPU time per command (cpu-ns/op), the
# median and the minimum. Wall time on a shared machine measures the
# neighbours; CPU time much less so.
#
#   bench/stats_overhead.sh            # ROUNDS=10 by default
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir "$tmp/before"
git archive HEAD | tar -x -C "$tmp/before"
(cd "$tmp/before" && python3 - <<'PY'
def cut(path, old, new=""):
    s = open(path).read()
    if old not in s:
        raise SystemExit(f"stats_overhead.sh: {path} no longer has the hunk to remove: {old!r}")
    open(path, "w").write(s.replace(old, new))
cut("command/client.go", "\tc.CountLimit(r.Limited)\n")                    # INFO limits
cut("command/batch.go", "\tc.srv.logIfSlow(c, cmd, args, d)\n")             # SLOWLOG
cut("command/multi.go", '\tt.SetGate(GateMulti, multiGate)\n')      # MULTI queueing
cut("engine/engine.go", "\tif e.lockShard(i) {\n\t\tdefer s.Unlock()\n\t}\n\tvar ent Entry",
    "\ts.Lock()\n\tdefer s.Unlock()\n\tvar ent Entry")                       # the transaction check
PY
)
(cd "$tmp/before" && go test -c -o "$tmp/before-ratelimit.test" ./command/ratelimit && go test -c -o "$tmp/before-node.test" ./node)
go test -c -o "$tmp/after-ratelimit.test" ./command/ratelimit
go test -c -o "$tmp/after-node.test" ./node

for ((r = 0; r < ROUNDS; r++)); do
  for v in before after; do
    for p in command/ratelimit:DispatchThrottle node:Pipeline/CL.THROTTLE/P16/hot; do
      d=${p%%:*}
      (cd "$d" && "$tmp/$v-${d##*/}.test" -test.run '^$' -test.bench "${p#*:}" \
        -test.benchtime 300000x -test.cpu 1)
    done | awk -v v=$v '/^Benchmark/ { for (i = 1; i <= NF; i++) if ($i == "cpu-ns/op") print v, $1, $(i-1) }'
  done
done | sort -k2,2 -k1,1 -k3n | awk '
  { k = $2 " " $1; n[k]++; x[k, n[k]] = $3 }
  END { for (k in n) printf "%-55s median %7.1f  min %7.1f cpu-ns/op (%d runs)\n", k, x[k, int((n[k] + 1) / 2)], x[k, 1], n[k] }' | sort
