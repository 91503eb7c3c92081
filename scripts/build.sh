#!/usr/bin/env bash
# Configures (once) and builds jitd with clang-19 and Ninja into build/.
#   bash scripts/build.sh            build everything (jitd, tests, benchmarks, fuzzers)
#   bash scripts/build.sh jitd       build only the named targets
# Environment: BUILD_DIR (default build), BUILD_TYPE (default Release),
# CMAKE_ARGS (extra configure arguments, e.g. "-DJITD_BUILD_FUZZERS=OFF").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export CC="${CC:-clang-19}"
export CXX="${CXX:-clang++-19}"
build_dir="${BUILD_DIR:-build}"
build_type="${BUILD_TYPE:-Release}"

# shellcheck disable=SC2086  # CMAKE_ARGS is a list of words on purpose
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" ${CMAKE_ARGS:-}

targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" "${targets[@]}"
