#!/usr/bin/env bash
# Runs the client-request fuzzer for SECONDS (default 20) from the seeds in
# tests/fuzz/seeds (text protos, encoded here). Prints one gtest-style line
# so the test runner can count it. A crash leaves its input in the work dir.
set -uo pipefail
build=${1:-build}
seconds=${2:-20}
work=$(mktemp -d /tmp/paxflow-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
for seed in tests/fuzz/seeds/*.txt; do
  protoc --proto_path=src_calvin/proto --encode=paxflow.ClientRequest client.proto \
    < "$seed" > "$work/corpus/$(basename "$seed" .txt)"
done
if "$build/bin/request_fuzzer" -max_total_time="$seconds" -seed=1 -timeout=10 \
     -artifact_prefix="$work/" "$work/corpus" > "$work/log" 2>&1; then
  echo "[  PASSED  ] 1 test. (request_fuzzer: $(grep -o 'Done [0-9]* runs' "$work/log" | head -1) in ${seconds} s)"
else
  tail -40 "$work/log"
  mkdir -p fuzz-crashes && cp "$work"/crash-* "$work"/leak-* "$work"/timeout-* fuzz-crashes/ 2>/dev/null
  echo "[  FAILED  ] 1 test, listed below: request_fuzzer (inputs saved in fuzz-crashes/)"
  exit 1
fi
