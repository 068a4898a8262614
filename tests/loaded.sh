#!/usr/bin/env bash
# Runs end-to-end tests on a loaded machine: every core busy with unrelated
# busy-looping processes (killed on exit) while the tests run COUNT times in
# a row, each run a fresh process. A test that fails only when the CPU is
# busy is a defect of the product or of the test, not noise.
#
#   tests/loaded.sh                   # cluster creation, reshard, failover: 20 runs
#   COUNT=1 RUN='TestCluster|TestSentinel' tests/loaded.sh
#
# COUNT  runs (20); RUN  the -run pattern; BUSY  busy processes (one per
# core); RACE  go test's race flag ("-race"; "" for none); LOG  where each
# failed run's output goes (a temp dir). Prints one line per run and the
# pass count; exits non-zero when any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${COUNT:-20}
run=${RUN:-'^(TestClusterBuiltWithRedisCli|TestClusterReshardUnderLoad|TestClusterFailsOverAPrimary)$'}
busy=${BUSY:-$(nproc)}
race=${RACE--race}
log=${LOG:-$(mktemp -d)}
mkdir -p "$log"

# The test binary is built before the load starts, so that the load slows
# the tests and not their compilation (each run links the limitdb binary it
# starts from the build cache).
bin=$(mktemp -d)
go test $race -c -o "$bin/tests.test" ./tests
go build -o /dev/null ./cmd/limitdb

pids=() # the busy loops
group=  # the running test binary's process group, with the servers it started
stop() {
  [ -n "$group" ] && kill -- "-$group" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$bin"
}
trap stop EXIT INT TERM
for ((i = 0; i < busy; i++)); do
  bash -c 'while :; do :; done' &
  pids+=($!)
done

passed=0
for ((i = 1; i <= count; i++)); do
  start=$SECONDS
  (cd tests && exec setsid "$bin/tests.test" -test.run "$run" -test.count 1 -test.timeout 20m) >"$log/run$i.out" 2>&1 &
  group=$!
  if wait "$group"; then
    passed=$((passed + 1))
    echo "run $i: ok ($((SECONDS - start))s)"
    rm -f "$log/run$i.out"
  else
    echo "run $i: FAIL ($((SECONDS - start))s), output in $log/run$i.out"
    grep -E '^\s*--- FAIL|Error:|panic:' "$log/run$i.out" | head -20 || true
  fi
  group=
done
echo "passed $passed of $count with $busy busy processes (-run '$run')"
[ "$passed" -eq "$count" ]
