#!/usr/bin/env bash
# multikey.sh: how the time of one multi-key command grows with its keys,
# limitdb beside redis-server in the same run, and how long a bystander's
# PING on another connection waits meanwhile. A command whose time grows
# faster than its keys (quadratic) shows as a ratio that climbs with N.
#
#   bench/multikey.sh                     N in 1000 10000 60000
#   COUNTS="1000 100000" bench/multikey.sh
#
# Environment: LIMITDB_BIN (default: build this tree), COUNTS.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

COUNTS=${COUNTS:-"1000 10000 60000"}
bin=${LIMITDB_BIN:-$work/limitdb}
[ -n "${LIMITDB_BIN:-}" ] || go build -o "$bin" ./cmd/limitdb

lport=$(free_port)
"$bin" --port "$lport" --dir "$work/l" --save 0 >"$work/limitdb.log" 2>&1 &
pids+=($!)
rport=$(free_port)
redis-server --port "$rport" --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
wait_ready "$lport"
wait_ready "$rport"

COUNTS=$COUNTS /usr/bin/python3 - "$lport" "$rport" <<'PY'
import os, sys, threading, time
import redis

ports = {"limitdb": int(sys.argv[1]), "redis": int(sys.argv[2])}
counts = [int(n) for n in os.environ["COUNTS"].split()]

def timed(port, build):
    """Runs the command build makes on one connection while another PINGs;
    returns its seconds and the bystander's worst PING in ms."""
    c = redis.Redis(port=port)
    by = redis.Redis(port=port)
    by.ping()
    worst, stop = [0.0], threading.Event()
    def bystander():
        while not stop.is_set():
            t = time.perf_counter()
            by.ping()
            worst[0] = max(worst[0], (time.perf_counter() - t) * 1000)
            time.sleep(0.001)
    th = threading.Thread(target=bystander)
    th.start()
    args = build()
    t = time.perf_counter()
    c.execute_command(*args)
    took = time.perf_counter() - t
    stop.set()
    th.join()
    return took, worst[0]

print(f"{'command':8} {'keys':>7} {'limitdb s':>10} {'redis s':>9} {'ratio':>6} {'bystander ms (limitdb/redis)':>30}")
for n in counts:
    keys = [f"mk:{i}" for i in range(n)]
    loads = [
        ("MSET", lambda: ["MSET"] + [x for k in keys for x in (k, "v")]),
        ("MGET", lambda: ["MGET"] + keys),
        ("EXISTS", lambda: ["EXISTS"] + keys),
        ("DEL", lambda: ["DEL"] + keys),
    ]
    for name, build in loads:
        res = {srv: timed(port, build) for srv, port in ports.items()}
        l, r = res["limitdb"], res["redis"]
        print(f"{name:8} {n:>7} {l[0]:>10.4f} {r[0]:>9.4f} {l[0] / max(r[0], 1e-9):>6.2f} {l[1]:>14.1f} / {r[1]:<14.1f}")
PY
