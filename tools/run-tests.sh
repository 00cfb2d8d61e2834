#!/usr/bin/env bash
# Runs every test suite and ends with one line: "N passed, N failed".
# Exits non-zero if anything failed or nothing ran.
# `run-tests.sh BUILD soak` runs the soak tests instead (the cluster tests
# named DISABLED_Soak*: long, bounded, out of `make test`).
set -uo pipefail
build=${1:-build}
mode=${2:-test}
suites=("$build/bin/unit_tests" "$build/bin/cluster_tests" "$build/bin/tsan_tests"
        "$build/bin/request_fuzzer")
gtest_args=(--gtest_color=no)
if [ "$mode" = soak ]; then
  suites=("$build/bin/cluster_tests")
  gtest_args+=(--gtest_also_run_disabled_tests "--gtest_filter=*.DISABLED_Soak*")
fi
passed=0
failed=0
tmp=$(mktemp -d /tmp/paxflow-tests.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [ "$mode" != soak ]; then
  # The component layering (tools/check-layout.sh) counts as one test.
  echo "== layout"
  if tools/check-layout.sh; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi
for suite in "${suites[@]}"; do
  name=$(basename "$suite")
  if [ ! -x "$suite" ]; then
    echo "== $name: missing (build failed?)"
    failed=$((failed + 1))
    continue
  fi
  echo "== $name"
  start=$(date +%s)
  if [ "$name" = request_fuzzer ]; then
    command=(tools/run-fuzz.sh "$build" "${FUZZ_SECONDS:-20}")
  else
    command=("$suite" "${gtest_args[@]}")
  fi
  # The unit and cluster suites run as gtest shards at once: unit tests
  # in $TEST_SHARDS (2 by default), cluster tests in $CLUSTER_TEST_SHARDS
  # (4 by default); 1 runs a suite whole. Each test picks its own ports and
  # directories, so shards never share one. The unit tests mostly compute:
  # two shards fill this 2-core machine. The cluster tests mostly wait
  # (epochs, elections, timeouts, processes that start and stop): with two
  # shards the machine stayed half idle, and four take the suite from about
  # 360 s to about 215 s. The ThreadSanitizer suite and the soak runs stay
  # whole.
  shards=1
  if [ "$mode" != soak ]; then
    if [ "$name" = unit_tests ]; then shards=${TEST_SHARDS:-2}; fi
    if [ "$name" = cluster_tests ]; then shards=${CLUSTER_TEST_SHARDS:-4}; fi
  fi
  pids=()
  for ((shard = 0; shard < shards; shard++)); do
    tag=""
    if ((shards > 1)); then tag="[shard $shard] "; fi
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard "${command[@]}" > "$tmp/$name.$shard.out" 2>&1 &
    pids+=($!)
    tail -n +1 -F --pid=$! "$tmp/$name.$shard.out" 2>/dev/null |
      grep --line-buffered -E '^\[ +(RUN|OK|FAILED|PASSED|SKIPPED) +\]|^\[==========\]|Failure|error:' |
      sed -u "s/^/$tag/" &
  done
  rc=0
  for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
  wait  # the tails end with their shard
  cat "$tmp/$name".*.out > "$tmp/$name.out"
  # One "[  PASSED  ] N tests" (and "[  FAILED  ] N tests") line per shard.
  suite_passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$tmp/$name.out" | awk '{s += $1} END {print s + 0}')
  suite_failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$tmp/$name.out" | awk '{s += $1} END {print s + 0}')
  if [ "$rc" -ne 0 ] && [ "$suite_failed" -eq 0 ]; then
    echo "== $name exited with status $rc (crash?); counting it as a failure; its last lines:"
    tail -n 60 "$tmp/$name.out"
    suite_failed=1
  fi
  if [ "$suite_failed" -ne 0 ]; then
    # The filter above keeps one line per assertion; a failure needs its
    # whole message (node tails, the values compared) to be diagnosed from
    # the CI log alone.
    sed -n 's/^\[  FAILED  \] \([^ ,]*\).* ms)$/\1/p' "$tmp/$name.out" | sort -u |
      while read -r test; do
        echo "== $name: output of $test (last 150 lines)"
        awk -v t="$test" '$0 == "[ RUN      ] " t {on = 1; n = 0}
                          on {buf[n++ % 150] = $0}
                          on && index($0, "[  FAILED  ] " t) == 1 && / ms\)$/ {
                            for (i = (n > 150 ? n - 150 : 0); i < n; i++) print buf[i % 150]; on = 0}' \
          "$tmp/$name.out"
      done
  fi
  echo "== $name: $suite_passed passed, $suite_failed failed ($(( $(date +%s) - start )) s)"
  passed=$((passed + suite_passed))
  failed=$((failed + suite_failed))
done
echo "$passed passed, $failed failed"
if [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then exit 1; fi
