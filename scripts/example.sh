#!/usr/bin/env bash
# Sets up the machine, builds the `jitd` tool and runs its main job on the
# bundled example: parse, verify and print examples/softmax.mlir, then run it
# on the reference interpreter (the example checks its own result).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
bash scripts/build.sh jitd

jitd="${BUILD_DIR:-build}/bin/jitd"
example=examples/softmax.mlir

echo
echo "== 1. jitd check $example  (parse + verify)"
"$jitd" check "$example"

echo
echo "== 2. jitd fmt $example  (parse, verify, print back as StableHLO text)"
"$jitd" fmt "$example"

echo
echo "== 3. jitd fmt --generic $example | jitd check -  (generic form round trip)"
"$jitd" fmt --generic "$example" | "$jitd" check -

echo
echo "== 4. jitd conformance --device=interpreter $example  (run it; its checks must hold)"
"$jitd" conformance --device=interpreter "$example"
