# lib.sh: what the benchmark scripts share; source it after `cd` to the
# repository root. It makes a scratch directory ($work), kills every pid
# in $pids at exit, and gives free loopback ports and a readiness wait.

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# cpu_ticks pids...: their user+system CPU time, all threads, in clock
# ticks ($hz a second). CPU time per request is the figure that survives a
# busy machine: req/s there depends on how much of its core each server got.
cpu_ticks() {
  local t=0 p f
  for p in "$@"; do
    read -ra f <"/proc/$p/stat"
    t=$((t + f[13] + f[14]))
  done
  echo "$t"
}
hz=$(getconf CLK_TCK)

# start_pair: limitdb ($LIMITDB_BIN) and redis-server, both pinned to core
# 0, in $work/l and $work/r, without snapshots; sets lp, rp (ports) and
# lpid, rpid, and waits until both answer.
start_pair() {
  lp=$(free_port); rp=$(free_port)
  mkdir -p "$work/l" "$work/r"
  taskset -c 0 "$LIMITDB_BIN" --port "$lp" --dir "$work/l" --save 0 >"$work/l/log" 2>&1 &
  lpid=$!; pids+=("$lpid")
  taskset -c 0 redis-server --port "$rp" --dir "$work/r" --save '' --appendonly no >"$work/r/log" 2>&1 &
  rpid=$!; pids+=("$rpid")
  wait_ready "$lp"; wait_ready "$rp"
}

wait_ready() { # port: until a server answers PING there
  for _ in $(seq 100); do
    redis-cli -p "$1" PING 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  echo "$(basename "$0"): server on port $1 did not start" >&2
  exit 1
}
