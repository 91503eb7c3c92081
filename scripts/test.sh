#!/usr/bin/env bash
# Sets up the machine, builds everything and runs every test (what CI runs).
#   bash scripts/test.sh [extra ctest arguments, e.g. -R corpus]
# Needs ../shared (the conformance corpus and models) beside the repository.
# Steps: setup; the conformance corpus on the interpreter built with
# AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/); then the
# regular build and all of ctest (unit tests, corpus round trip, conformance,
# a short fuzz run). Set SKIP_SANITIZED_CONFORMANCE=1 to skip the first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
shared="${SHARED_DIR:-$(cd .. && pwd)/shared}"

bash scripts/setup.sh

if [ "${SKIP_SANITIZED_CONFORMANCE:-0}" != 1 ]; then
  echo "== conformance corpus on the interpreter under ASan + UBSan (build-asan/)"
  BUILD_DIR=build-asan CMAKE_ARGS="-DJITD_SANITIZE=address,undefined -DJITD_BUILD_TESTS=OFF -DJITD_BUILD_BENCHMARKS=OFF -DJITD_BUILD_FUZZERS=OFF -DJITD_SHARED_DIR=$shared" \
    bash scripts/build.sh jitd
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    build-asan/bin/jitd conformance --device=interpreter --jobs=2 --timeout=600 \
    --expected-failures=tests/conformance/interpreter_expected_failures.txt \
    "$shared/conformance/stablehlo"
  echo "== the same after the compiler passes (jit/passes), and the models through them"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    build-asan/bin/jitd conformance --device=interpreter --jobs=2 --timeout=600 --pipeline=default \
    --expected-failures=tests/conformance/interpreter_expected_failures.txt \
    "$shared/conformance/stablehlo"
  for model in "$shared"/models/*.mlir; do
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      build-asan/bin/jitd opt --verify-each --stats "$model" >/dev/null
  done
fi

echo "== build and ctest"
bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j2 "$@"
