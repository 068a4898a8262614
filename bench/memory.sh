#!/usr/bin/env bash
# Memory per live rate-limit key: limitdb vs redis-server in the same run.
#
# Both servers get the same redis-benchmark load of random keys, each
# holding an hour of GCRA state (1 request per hour, burst 1):
#   limitdb:      CL.THROTTLE key:__rand_int__ 1 1 3600 1
#   redis-server: bench/lua/gcra.lua (EVALSHA), one string per key
# Figure: (resident memory after - before) / DBSIZE, from /proc/PID/status.
# Then limitdb is filled with 10-second keys and watched while they expire.
#
# Usage: bench/memory.sh [requests] [key-range]     (defaults 3000000 1000000)
# Needs: go, redis-server, redis-benchmark, redis-cli. Uses two free ports
# on 127.0.0.1 and a temporary directory; kills both servers on exit.
set -euo pipefail
N=${1:-3000000}
R=${2:-1000000}
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

rss() { awk '/VmRSS/ {print $2*1024}' /proc/"$1"/status; }
fill() { redis-benchmark -p "$1" -n "$N" -r "$R" -c 50 -P 16 -q "${@:2}" | tr '\r' '\n' | tail -1; }

go build -o "$work/limitdb" ./cmd/limitdb

LP=$(free_port)
"$work/limitdb" --port "$LP" --dir "$work/ldb" --save 0 2>"$work/limitdb.log" &
LPID=$!; pids+=("$LPID")
RP=$(free_port)
redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --daemonize no >"$work/redis.log" &
RPID=$!; pids+=("$RPID")
wait_ready "$LP"; wait_ready "$RP"
SHA=$(redis-cli -p "$RP" SCRIPT LOAD "$(cat bench/lua/gcra.lua)")

echo "== fill: $N requests over $R random keys, hour-long GCRA state"
L0=$(rss "$LPID"); R0=$(rss "$RPID")
echo "limitdb      $(fill "$LP" CL.THROTTLE key:__rand_int__ 1 1 3600 1)"
echo "redis (Lua)  $(fill "$RP" EVALSHA "$SHA" 1 key:__rand_int__ 1 1 3600 1)"
L1=$(rss "$LPID"); R1=$(rss "$RPID")
LK=$(redis-cli -p "$LP" DBSIZE); RK=$(redis-cli -p "$RP" DBSIZE)
python3 - "$L0" "$L1" "$LK" "$R0" "$R1" "$RK" <<'PY'
import sys
l0, l1, lk, r0, r1, rk = map(int, sys.argv[1:])
lb, rb = (l1 - l0) / lk, (r1 - r0) / rk
print(f"limitdb      keys {lk:>8}  rss {l0/2**20:7.1f} -> {l1/2**20:7.1f} MiB  {lb:6.1f} bytes/key")
print(f"redis (Lua)  keys {rk:>8}  rss {r0/2**20:7.1f} -> {r1/2**20:7.1f} MiB  {rb:6.1f} bytes/key")
print(f"ratio limitdb/redis = {lb/rb:.2f}")
PY
redis-cli -p "$RP" FLUSHALL >/dev/null
redis-cli -p "$LP" FLUSHALL >/dev/null

echo "== expiry: the same load with 10-second keys, then wait"
sleep 2
E0=$(rss "$LPID")
fill "$LP" CL.THROTTLE key:__rand_int__ 1 1 10 1 >/dev/null
E1=$(rss "$LPID"); EK=$(redis-cli -p "$LP" DBSIZE)
echo "t=0    keys $EK  rss $((E1 / 1048576)) MiB (before the fill: $((E0 / 1048576)) MiB)"
for s in 15 30 60 90; do
  sleep $((s - ${prev:-0})); prev=$s
  echo "t=${s}s  keys $(redis-cli -p "$LP" DBSIZE)  rss $(($(rss "$LPID") / 1048576)) MiB  expired_keys $(redis-cli -p "$LP" INFO stats | tr -d '\r' | awk -F: '/^expired_keys/ {print $2}')"
done
