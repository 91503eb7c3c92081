#!/usr/bin/env bash
# Fuzzes the StableHLO parser for a while, by hand (ctest runs a short,
# fixed fuzz pass; this is for long runs).
#   bash scripts/fuzz.sh [SECONDS] [extra libFuzzer flags]     (default 600 s)
# Builds the fuzz target in build-fuzz/ (Release + asserts, ASan + UBSan),
# seeds it with the whole conformance corpus, the models and
# tests/fuzz/seeds/, and keeps what it learns in build-fuzz/fuzz-corpus/
# (reused by the next run). Crashes land in build-fuzz/fuzz-artifacts/;
# reproduce one with: build-fuzz/bin/jitd_parser_fuzz FILE
# Environment: JOBS (parallel fuzzing processes, default 1), MAX_LEN
# (largest input, default 65536), SHARED_DIR (default ../shared).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:-600}"
shift || true
shared="${SHARED_DIR:-$(cd .. && pwd)/shared}"
out=build-fuzz

BUILD_DIR="$out" CMAKE_ARGS="-DJITD_BUILD_FUZZERS=ON -DJITD_BUILD_TESTS=OFF -DJITD_BUILD_BENCHMARKS=OFF -DJITD_SHARED_DIR=$shared" \
  bash scripts/build.sh jitd_parser_fuzz

mkdir -p "$out/fuzz-corpus" "$out/fuzz-artifacts"
jobs_flags=()
if [ "${JOBS:-1}" -gt 1 ]; then jobs_flags=(-fork="$JOBS"); fi

echo "fuzzing for ${seconds}s; corpus $out/fuzz-corpus, crashes $out/fuzz-artifacts/"
exec "$out/bin/jitd_parser_fuzz" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len="${MAX_LEN:-65536}" -print_final_stats=1 \
  -dict=tests/fuzz/mlir.dict \
  -artifact_prefix="$out/fuzz-artifacts/" \
  "${jobs_flags[@]}" "$@" \
  "$out/fuzz-corpus" tests/fuzz/seeds "$shared/conformance/stablehlo" "$shared/models"
