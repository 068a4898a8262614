#!/usr/bin/env bash
# rls.sh: limitdb's Envoy rate limit service (gRPC RLS v3) against
# envoyproxy/ratelimit backed by redis-server, same rules, same load, same
# run (bench/README.md, "Envoy rate limit service").
#
# limitdb is pinned to core 0; so are envoyproxy/ratelimit and its
# redis-server, together, so each side has one core in all. bench/rlsload
# (50 workers over 4 gRPC connections, one descriptor a request) runs on
# core 1. Three loads, each on both servers in turn (the order alternates
# by round):
#
#   ok      closed loop, domain bench, user=u<0..99999>, 1M a minute: all OK
#   over    closed loop, tight=u<0..99>, 10 a minute: nearly all OVER_LIMIT
#   atN     open loop at N req/s of the ok load, for each N in RATES:
#           latency at equal offered load
#
# Per run it prints rlsload's line and each side's CPU time per request
# served while rlsload ran, warm-up included (envoyproxy/ratelimit's
# includes its redis-server's); then per load the
# medians and the medians of the per-round ratios limitdb / peer.
#
#   PEER_BIN=/tmp/peers/service_cmd bench/rls.sh
#   ROUNDS=5 DURATION=5s RATES='2000 5000' bench/rls.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
RATES=${RATES:-2000 5000}
PEER_BIN=${PEER_BIN:-/tmp/peers/service_cmd}
for tool in redis-server redis-cli taskset python3 go; do
  command -v "$tool" >/dev/null || { echo "rls.sh: $tool is required" >&2; exit 1; }
done
[ -x "$PEER_BIN" ] || {
  echo "rls.sh: no envoyproxy/ratelimit at $PEER_BIN; build it with" >&2
  echo "  GOBIN=/tmp/peers go install github.com/envoyproxy/ratelimit/src/service_cmd@latest" >&2
  exit 1
}
# shellcheck source=bench/lib.sh
. bench/lib.sh

LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb
go build -o "$work/rlsload" ./bench/rlsload

mkdir -p "$work/rules" "$work/l" "$work/r" "$work/peer/ratelimit/config"
cat >"$work/rules/bench.yaml" <<'EOF'
domain: bench
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: 1000000
  - key: tight
    rate_limit:
      unit: minute
      requests_per_unit: 10
EOF
cp "$work/rules/bench.yaml" "$work/peer/ratelimit/config/"

lp=$(free_port); lg=$(free_port); rp=$(free_port)
pp=$(free_port); pg=$(free_port); pd=$(free_port)
taskset -c 0 "$LIMITDB_BIN" --port "$lp" --grpc-port "$lg" --rls-config-dir "$work/rules" \
  --dir "$work/l" --save 0 >"$work/l/log" 2>&1 &
lpid=$!; pids+=("$lpid")
taskset -c 0 redis-server --port "$rp" --dir "$work/r" --save '' --appendonly no >"$work/r/log" 2>&1 &
rpid=$!; pids+=("$rpid")
wait_ready "$lp"; wait_ready "$rp"
env HOST=127.0.0.1 PORT="$pp" GRPC_HOST=127.0.0.1 GRPC_PORT="$pg" DEBUG_HOST=127.0.0.1 DEBUG_PORT="$pd" \
  RUNTIME_ROOT="$work/peer" RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_WATCH_ROOT=false \
  REDIS_SOCKET_TYPE=tcp REDIS_URL="127.0.0.1:$rp" USE_STATSD=false LOG_LEVEL=warn \
  taskset -c 0 "$PEER_BIN" >"$work/peer/log" 2>&1 &
ppid=$!; pids+=("$ppid")
for _ in $(seq 100); do
  python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$pp/healthcheck', timeout=1)" 2>/dev/null && break
  sleep 0.1
done
python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$pp/healthcheck', timeout=1)" 2>/dev/null || {
  echo "rls.sh: envoyproxy/ratelimit did not start:" >&2; tail -20 "$work/peer/log" >&2; exit 1
}


# load server: one rlsload run pinned to core 1; prints the CSV line with
# the load, server, round and CPU microseconds per request added.
run() {
  local load=$1 server=$2 addr sp args line before after
  case $server in
    limitdb) addr=127.0.0.1:$lg; sp=("$lpid") ;;
    peer) addr=127.0.0.1:$pg; sp=("$ppid" "$rpid") ;;
  esac
  case $load in
    ok) args=(-descriptor user -keys 100000) ;;
    over) args=(-descriptor tight -keys 100) ;;
    at*) args=(-descriptor user -keys 100000 -rate "${load#at}") ;;
  esac
  before=$(cpu_ticks "${sp[@]}")
  line=$(taskset -c 1 "$work/rlsload" -addr "$addr" -duration "$DURATION" -label "$load,$server,$round" "${args[@]}")
  after=$(cpu_ticks "${sp[@]}")
  python3 -c "import sys; n=int(sys.argv[1].split(',')[-1]); \
print(sys.argv[1] + ',%.1f' % ((int(sys.argv[3])-int(sys.argv[2]))/float(sys.argv[4])*1e6/n if n else 0))" \
    "$line" "$before" "$after" "$hz"
}

results=$work/results.csv
echo "load,server,round,rate,rps,p50_us,p99_us,p999_us,max_us,ok,over_limit,errors,sent,cpu_us_per_req"
for round in $(seq "$ROUNDS"); do
  order=(limitdb peer); [ $((round % 2)) = 0 ] && order=(peer limitdb)
  for load in ok over $(printf 'at%s ' $RATES); do
    for server in "${order[@]}"; do
      run "$load" "$server" | tee -a "$results"
    done
  done
done

python3 - "$results" <<'PY'
import statistics, sys
rows = [l.strip().split(",") for l in open(sys.argv[1]) if l.strip()]
med = statistics.median
by = {}
for r in rows:
    by.setdefault((r[0], r[1]), {})[r[2]] = r
print("\nmedians over rounds; ratios are medians of the per-round limitdb / peer")
print("%-8s %-8s %9s %8s %8s %9s %8s" % ("load", "server", "req/s", "p50_us", "p99_us", "p999_us", "cpu_us"))
loads = list(dict.fromkeys(r[0] for r in rows))
for load in loads:
    for server in ("limitdb", "peer"):
        rs = list(by.get((load, server), {}).values())
        if not rs:
            continue
        col = lambda i: med(float(r[i]) for r in rs)
        print("%-8s %-8s %9.0f %8.0f %8.0f %9.0f %8.1f" % (load, server, col(4), col(5), col(6), col(7), col(13)))
    l, p = by.get((load, "limitdb"), {}), by.get((load, "peer"), {})
    rounds = sorted(set(l) & set(p))
    ratio = lambda i: med(float(l[k][i]) / float(p[k][i]) for k in rounds if float(p[k][i]))
    print("%-8s limitdb/peer: req/s %.2fx, p50 %.2fx, p99 %.2fx, CPU per request %.2fx (%d rounds)"
          % (load, ratio(4), ratio(5), ratio(6), ratio(13), len(rounds)))
PY
