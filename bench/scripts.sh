#!/usr/bin/env bash
# scripts.sh: Lua limiter scripts on limitdb against redis-server, the
# same script text and arguments, same run (bench/README.md, "Scripts").
#
# Each server is pinned to core 0 and redis-benchmark (50 clients,
# pipeline 16, 100k random keys) to core 1. For each script it loads the
# text with SCRIPT LOAD on both and runs EVALSHA, in alternating rounds,
# and prints req/s, p99 and the server's CPU time per request per round,
# then the medians and limitdb/Redis: req/s, and requests per CPU second
# (the figure a load generator that cannot saturate limitdb's core does not
# cap).
#
#   redis_rate.allowN   go-redis/redis_rate v10's GCRA script, read from the
#                       Go module cache: limitdb runs it natively
#   ulule.incr          ulule/limiter v3's redis store increment (native)
#   flexible.incrTtl    rate-limiter-flexible's RateLimiterRedis script, read
#                       from tests/clients/node/node_modules (native; skipped
#                       without `npm ci` there)
#   rate-limit-redis.increment  rate-limit-redis's (express-rate-limit's
#                       store) fixed window, from the same node_modules (native)
#   limits.incr_expire  python-limits' fixed window, from Debian's
#                       python3-limits (native; skipped without it)
#   throttled.cas       throttled v2's goredisstore compare-and-swap, from the
#                       Go module cache (native): every key is set to the
#                       old value first, so each call is a GET and a SETEX
#   bottleneck.check    bottleneck 2.19.5's check script (native), from the
#                       same node_modules, on one limiter's eight keys
#                       (init and register_client run first): one call of
#                       limiter.check(1)
#   bottleneck.submit   its submit script on the same limiter (native): one
#                       job queued
#   gcra.lua            bench/lua/gcra.lua: a GCRA script limitdb does not
#                       recognise, on the interpreter
#   slog.lua            bench/lua/slog.lua: a sliding log on a sorted set,
#                       on the interpreter
#
#   bench/scripts.sh                 3 rounds of 300k requests
#   ROUNDS=5 N=500000 bench/scripts.sh
#   ONLY='limits|gcra' bench/scripts.sh  the scripts whose names match a regular expression
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
N=${N:-300000}
ONLY=${ONLY:-.}
for tool in redis-server redis-cli redis-benchmark taskset python3 go; do
  command -v "$tool" >/dev/null || { echo "scripts.sh: $tool is required" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. bench/lib.sh

LIMITDB_BIN=${LIMITDB_BIN:-$work/limitdb-server}
[ -x "$LIMITDB_BIN" ] || go build -o "$LIMITDB_BIN" ./cmd/limitdb

# The libraries' own texts, from the modules the tests use.
rrdir=$(go list -m -f '{{.Dir}}' github.com/go-redis/redis_rate/v10)
uldir=$(go list -m -f '{{.Dir}}' github.com/ulule/limiter/v3)
thdir=$(go list -m -f '{{.Dir}}' github.com/throttled/throttled/v2)
python3 - "$rrdir/lua.go" "$uldir/drivers/store/redis/store.go" "$thdir/store/goredisstore.v9/goredisstore.go" \
  tests/clients/node/node_modules/rate-limiter-flexible/lib/RateLimiterRedis.js \
  tests/clients/node/node_modules/rate-limit-redis/dist/index.mjs \
  /usr/lib/python3/dist-packages/limits/resources/redis/lua_scripts/incr_expire.lua "$work" <<'PY'
import os, re, shutil, sys
rr, ul, th, fl, rl, li, out = sys.argv[1:]
src = open(rr).read()
open(out + "/redis_rate_allowN.lua", "w").write(dict(re.findall(r'var (\w+) = redis.NewScript\(`(.*?)`\)', src, re.S))["allowN"])
src = open(ul).read()
open(out + "/ulule_incr.lua", "w").write(dict(re.findall(r'(lua\w+Script) = `(.*?)`', src, re.S))["luaIncrScript"])
open(out + "/throttled_cas.lua", "w").write(re.search(r'redisCASScript\s*= `(.*?)`', open(th).read(), re.S).group(1))
if os.path.exists(fl):
    body = re.search(r'const incrTtlLuaScript = `(.*?)`;', open(fl).read(), re.S).group(1)
    open(out + "/flexible.lua", "w").write(body.replace("\\\n", ""))
if os.path.exists(rl):  # as the library makes it: each line's leading white space dropped, trimmed
    body = re.search(r'increment: `(.*?)`', open(rl).read(), re.S).group(1)
    open(out + "/rate_limit_redis.lua", "w").write(re.sub(r'(?m)^\s+', '', body).strip())
if os.path.exists(li):
    shutil.copy(li, out + "/limits_incr_expire.lua")
PY

# bottleneck's scripts as its Scripts.payload makes them.
bn=tests/clients/node/node_modules/bottleneck/lib/Scripts.js
if [ -f "$bn" ] && command -v node >/dev/null; then
  node -e 'const s = require(process.argv[1]), fs = require("fs");
for (const n of ["init", "register_client", "check", "submit"]) fs.writeFileSync(process.argv[2] + "/bottleneck_" + n + ".lua", s.payload(n));' \
    "$PWD/$bn" "$work"
fi
bnkeys="8 b_bench_settings b_bench_job_weights b_bench_job_expirations b_bench_job_clients b_bench_client_running b_bench_client_num_queued b_bench_client_last_registered b_bench_client_last_seen"
bnnow=1700000000000
# bottleneck_setup port: a limiter "bench" as Bottleneck's defaults make
# it (no maxConcurrent, no reservoir), and a client "c1" registered.
bottleneck_setup() {
  local init reg
  init=$(redis-cli -p "$1" -x SCRIPT LOAD <"$work/bottleneck_init.lua")
  reg=$(redis-cli -p "$1" -x SCRIPT LOAD <"$work/bottleneck_register_client.lua")
  # shellcheck disable=SC2086
  redis-cli -p "$1" EVALSHA "$init" $bnkeys "$bnnow" c1 1 2.19.5 maxConcurrent "" minTime 0 highWater "" \
    strategy 1 penalty "" reservoir "" reservoirRefreshInterval "" reservoirRefreshAmount "" \
    reservoirIncreaseInterval "" reservoirIncreaseAmount "" reservoirIncreaseMaximum "" id bench \
    version 2.19.5 groupTimeout "" clientTimeout 10000 >/dev/null
  # shellcheck disable=SC2086
  redis-cli -p "$1" EVALSHA "$reg" $bnkeys "$bnnow" c1 0 >/dev/null
}

start_pair

# name file args [keys]: the scripts and their arguments after the keys;
# without keys, one of 100k random keys.
scripts=(
  "redis_rate.allowN|$work/redis_rate_allowN.lua|1000 1000 60 1"
  "ulule.incr|$work/ulule_incr.lua|1 60000"
  "gcra.lua|bench/lua/gcra.lua|99 1000 60"
  "slog.lua|bench/lua/slog.lua|100 60"
)
[ -f "$work/flexible.lua" ] && scripts+=("flexible.incrTtl|$work/flexible.lua|1 60 100 60")
[ -f "$work/rate_limit_redis.lua" ] && scripts+=("rate-limit-redis.increment|$work/rate_limit_redis.lua|60000")
[ -f "$work/limits_incr_expire.lua" ] && scripts+=("limits.incr_expire|$work/limits_incr_expire.lua|60 1")
scripts+=("throttled.cas|$work/throttled_cas.lua|5 5 60")
if [ -f "$work/bottleneck_check.lua" ]; then
  scripts+=("bottleneck.check|$work/bottleneck_check.lua|$bnnow c1 1|$bnkeys")
  scripts+=("bottleneck.submit|$work/bottleneck_submit.lua|$bnnow c1 0 1|$bnkeys")
fi
# fill port name: every key redis-benchmark's -r 100000 names holds 5.
fill() {
  python3 -c 'import sys
for i in range(100000):
    k = "%s:%012d" % (sys.argv[1], i)
    sys.stdout.write("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\n5\r\n" % (len(k), k))' "$2" |
    redis-cli -p "$1" --pipe >/dev/null
}
results=$work/results.csv
: >"$results"
echo "script,server,round,rps,p99_ms,cpu_us_per_req"
for round in $(seq "$ROUNDS"); do
  for s in "${scripts[@]}"; do
    IFS='|' read -r name file args keys <<<"$s"
    [[ $name =~ $ONLY ]] || continue
    for kind in limitdb redis; do
      port=$lp pid=$lpid; [ "$kind" = redis ] && port=$rp pid=$rpid
      sha=$(redis-cli -p "$port" -x SCRIPT LOAD <"$file") # -x: the exact bytes, final newline included
      [ "$name" = throttled.cas ] && fill "$port" "$name"
      [[ $name == bottleneck.* ]] && bottleneck_setup "$port"
      [ -n "$keys" ] || keys="1 $name:__rand_int__"
      before=$(cpu_ticks "$pid")
      # shellcheck disable=SC2086
      line=$(taskset -c 1 redis-benchmark -p "$port" -c 50 -P 16 -n "$N" -r 100000 --csv \
        EVALSHA "$sha" $keys $args | tail -1)
      after=$(cpu_ticks "$pid")
      rps=$(echo "$line" | cut -d, -f2 | tr -d '"')
      p99=$(echo "$line" | cut -d, -f7 | tr -d '"')
      cpu=$(python3 -c "print('%.2f' % (($after - $before) / $hz * 1e6 / $N))")
      echo "$name,$kind,$round,$rps,$p99,$cpu" | tee -a "$results"
    done
  done
done
echo
redis-cli -p "$lp" INFO scripting | grep native_ || true
python3 - "$results" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
by = {}
for name, kind, rnd, rps, p99, cpu in rows:
    by.setdefault((name, kind), []).append((float(rps), float(p99), float(cpu)))
print()
print("medians over the rounds: req/s, p99 ms, server CPU us per request; limitdb / Redis")
for name in dict.fromkeys(r[0] for r in rows):
    l, r = by[(name, "limitdb")], by[(name, "redis")]
    lr, rr = statistics.median(x[0] for x in l), statistics.median(x[0] for x in r)
    lp, rp = statistics.median(x[1] for x in l), statistics.median(x[1] for x in r)
    lc, rc = statistics.median(x[2] for x in l), statistics.median(x[2] for x in r)
    print("%-26s limitdb %7.0f req/s p99 %6.2f ms cpu %5.2f us | redis %7.0f req/s p99 %6.2f ms cpu %5.2f us | req/s %.2fx, requests per CPU second %.2fx"
          % (name, lr, lp, lc, rr, rp, rc, lr / rr, rc / lc if lc else 0))
PY
