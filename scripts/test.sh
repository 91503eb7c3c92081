#!/usr/bin/env bash
# Sets up the machine, builds everything and runs every test (what CI runs).
#   bash scripts/test.sh [extra ctest arguments, e.g. -R corpus]
# Needs ../shared (the conformance corpus and models) beside the repository.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j2 "$@"
