#!/usr/bin/env bash
# Sets up the machine, builds everything and runs every test (what CI runs).
#   bash scripts/test.sh [extra ctest arguments, e.g. -R corpus]
# Needs ../shared (the conformance corpus and models) beside the repository.
# Steps: setup, then the build and all of ctest (unit tests, corpus round
# trip, conformance, the corpus on the interpreter under AddressSanitizer +
# UndefinedBehaviorSanitizer, short fuzz runs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
shared="${SHARED_DIR:-$(cd .. && pwd)/shared}"

bash scripts/setup.sh
# The project's virtual environment of pinned PyPI packages (JAX, Flax,
# pytest): the PJRT plugin's and the JAX export suite's tests run in it.
venv_python="$(bash scripts/venv.sh | tail -1)"

echo "== build and ctest"
CMAKE_ARGS="${CMAKE_ARGS:-} -DJITD_SHARED_DIR=$shared -DJITD_VENV_PYTHON=$venv_python" bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j2 "$@"
