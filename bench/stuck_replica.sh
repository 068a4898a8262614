#!/usr/bin/env bash
# stuck_replica.sh: what a replica that never reads costs its primary
# (issue: a fake replica that sends PSYNC and then reads nothing). limitdb
# and redis-server each get one such replica and the same writes
# (redis-benchmark SET, 100-byte values); the script prints each
# primary's peak RSS while the writes run, and whether the replica was
# cut (the primary's log and INFO replication).
#
#   bench/stuck_replica.sh
#   REQUESTS=2000000 bench/stuck_replica.sh
#   STUCK=0 bench/stuck_replica.sh      the same writes with no replica: the
#                                       keyspace's own share of the peak
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${REQUESTS:-1000000}
STUCK=${STUCK:-1}
for tool in redis-server redis-cli redis-benchmark taskset python3 go; do
  command -v "$tool" >/dev/null || { echo "stuck_replica.sh: $tool is required" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. bench/lib.sh
LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb
start_pair

# stuck PORT: a replica that asks for a full sync and never reads again.
stuck() {
  python3 - "$1" <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.sendall(b"*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$4\r\n6399\r\n")
s.sendall(b"*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n")
time.sleep(3600)
PY
  pids+=("$!")
}

# peak PID: the highest RSS (MiB) of PID until the file $work/done exists.
peak() {
  local pid=$1 max=0 rss
  while [ ! -e "$work/done" ]; do
    rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
    [ "$rss" -gt "$max" ] && max=$rss
    sleep 0.05
  done
  echo $((max / 1024))
}

echo "server,requests,peak_rss_mib,connected_slaves_after"
for side in limitdb redis; do
  case $side in
    limitdb) port=$lp; pid=$lpid ;;
    redis) port=$rp; pid=$rpid ;;
  esac
  rm -f "$work/done"
  if [ "$STUCK" = 1 ]; then stuck "$port"; sleep 1; fi
  peak "$pid" >"$work/peak" &
  watcher=$!
  taskset -c 1 redis-benchmark -p "$port" -t set -n "$REQUESTS" -d 100 -r 1000000 -P 16 -q >/dev/null
  touch "$work/done"
  wait "$watcher"
  slaves=$(redis-cli -p "$port" INFO replication | tr -d '\r' | awk -F: '/^connected_slaves/{print $2}')
  echo "$side,$REQUESTS,$(cat "$work/peak"),$slaves"
done
