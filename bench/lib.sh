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

wait_ready() { # port: until a server answers PING there
  for _ in $(seq 100); do
    redis-cli -p "$1" PING 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  echo "$(basename "$0"): server on port $1 did not start" >&2
  exit 1
}
