#!/usr/bin/env bash
# A shape-polymorphic program (`?` batch dimension, as jax.export writes
# them) through `jitd check` and `jitd run`: refined for the shapes of the
# --input files or --arg-shapes, in process on both devices and through the
# daemon (one cache entry per concrete shape), and the errors that name what
# is missing or wrong.
# Usage: dynamic_cli_test.sh PATH/TO/jitd PYTHON   (ctest runs it)
set -uo pipefail

jitd="$1"
python="$2"
tmp="$(mktemp -d)"
stop_daemon() {
  local pidfile="$tmp/daemon/jitd.pid"
  [ -f "$pidfile" ] || return 0
  local pid; pid="$(cat "$pidfile")"
  kill "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -9 "$pid" 2>/dev/null
  rm -f "$pidfile"
}
trap 'stop_daemon; rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_exit() {  # expect_exit CODE NAME CMD...
  local want="$1" name="$2"; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    fail "$name: exit $got, want $want"
    sed 's/^/  stderr: /' "$tmp/err" | head -5
  fi
}
expect_grep() {  # expect_grep NAME FILE REGEX
  grep -Eq -- "$3" "$2" || { fail "$1: '$3' not found in $(basename "$2")"; head -5 "$2" | sed 's/^/  /'; }
}

cat >"$tmp/poly.mlir" <<'EOF'
// y = x @ w + 1 for x of shape (b, 4); s = sum of y over b.
func.func public @main(%x: tensor<?x4xf32>, %w: tensor<4x3xf32>) -> (tensor<3xf32>, tensor<?x3xf32>) {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
  %one = stablehlo.constant dense<1.000000e+00> : tensor<f32>
  %b = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %b1 = stablehlo.reshape %b : (tensor<i32>) -> tensor<1xi32>
  %c3 = stablehlo.constant dense<3> : tensor<1xi32>
  %shape = stablehlo.concatenate %b1, %c3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %ones = stablehlo.dynamic_broadcast_in_dim %one, %shape, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x3xf32>
  %y = stablehlo.add %0, %ones : tensor<?x3xf32>
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %s = stablehlo.reduce(%y init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<?x3xf32>, tensor<f32>) -> tensor<3xf32>
  return %s, %y : tensor<3xf32>, tensor<?x3xf32>
}
EOF
"$python" - "$tmp" <<'EOF' || { echo "FAIL: numpy"; exit 1; }
import sys, numpy as np
d = sys.argv[1]
w = np.arange(12, dtype=np.float32).reshape(4, 3) / 4
np.save(d + "/w.npy", w)
for b in (1, 2, 5):
    x = (np.arange(b * 4, dtype=np.float32).reshape(b, 4) - 3) / 2
    np.save(d + f"/x{b}.npy", x)
    y = x @ w + 1
    np.save(d + f"/want_y{b}.npy", y)
    np.save(d + f"/want_s{b}.npy", y.sum(axis=0))
EOF

compare() {  # compare NAME OUTDIR B
  "$python" - "$2" "$tmp" "$3" <<'EOF' || fail "$1: results differ from numpy"
import sys, numpy as np
out, d, b = sys.argv[1], sys.argv[2], sys.argv[3]
y, s = np.load(out + "/result_1.npy"), np.load(out + "/result_0.npy")
assert y.shape == (int(b), 3), y.shape
assert np.allclose(y, np.load(d + f"/want_y{b}.npy"), rtol=1e-6), y
assert np.allclose(s, np.load(d + f"/want_s{b}.npy"), rtol=1e-6), s
EOF
}

# --- check ---
expect_exit 0 "check" "$jitd" check "$tmp/poly.mlir"
expect_grep "check" "$tmp/err" "ok \(dynamic shapes"
expect_exit 0 "check --arg-shapes" "$jitd" check --arg-shapes "tensor<5x4xf32>, tensor<4x3xf32>" "$tmp/poly.mlir"
expect_exit 1 "check --arg-shapes, wrong static dim" "$jitd" check --arg-shapes "tensor<5x5xf32>, tensor<4x3xf32>" "$tmp/poly.mlir"
expect_grep "check --arg-shapes, wrong static dim" "$tmp/err" "argument #0 of @main: the given type tensor<5x5xf32> differs in static dimension 1"
expect_exit 2 "check --arg-shapes, bad text" "$jitd" check --arg-shapes "tensor<5x4xfoo>" "$tmp/poly.mlir"
expect_grep "check --arg-shapes, bad text" "$tmp/err" "argument type #0"

# --- opt: passes run on the refined program only ---
expect_exit 1 "opt without shapes" "$jitd" opt "$tmp/poly.mlir"
expect_grep "opt without shapes" "$tmp/err" "dynamic shapes"
expect_exit 0 "opt --arg-shapes" "$jitd" opt --arg-shapes "tensor<5x4xf32>, tensor<4x3xf32>" "$tmp/poly.mlir"
expect_grep "opt --arg-shapes" "$tmp/out" "tensor<5x3xf32>"
grep -q "dynamic_broadcast_in_dim\|get_dimension_size\|?x" "$tmp/out" && fail "opt --arg-shapes: dynamic ops or types left"

# --- run in process, both devices, shapes from the --input files ---
for device in interpreter cpu; do
  for b in 1 5; do
    expect_exit 0 "run $device b=$b" "$jitd" run --in-process --device=$device \
      -i 0="$tmp/x$b.npy" -i 1="$tmp/w.npy" --output "$tmp/out_${device}_$b" "$tmp/poly.mlir"
    compare "run $device b=$b" "$tmp/out_${device}_$b" $b
  done
done
expect_exit 0 "run --arg-shapes --random-inputs" "$jitd" run --in-process \
  --arg-shapes "tensor<2x4xf32>, tensor<4x3xf32>" --random-inputs "$tmp/poly.mlir"
expect_grep "run --arg-shapes --random-inputs" "$tmp/out" "result 1: tensor<2x3xf32>"
expect_exit 2 "run without shapes" "$jitd" run --in-process --random-inputs "$tmp/poly.mlir"
expect_grep "run without shapes" "$tmp/err" "argument 0 \(%x\) of @main has the dynamic type tensor<\?x4xf32>"
expect_exit 2 "run --arg-shapes, wrong count" "$jitd" run --in-process --arg-shapes "tensor<2x4xf32>" "$tmp/poly.mlir"
expect_grep "run --arg-shapes, wrong count" "$tmp/err" "gives 1 types, @main takes 2"

# --- through the daemon: one cache entry per concrete shape ---
sock="$tmp/daemon/jitd.sock"
mkdir -p "$tmp/daemon"
export XDG_CACHE_HOME="$tmp/xdg_cache"  # the started daemon's disk cache: empty
n=0
for b in 2 5 2; do
  n=$((n + 1))
  expect_exit 0 "daemon b=$b" "$jitd" run --socket "$sock" -i 0="$tmp/x$b.npy" -i 1="$tmp/w.npy" \
    --output "$tmp/out_daemon_$n" "$tmp/poly.mlir"
  compare "daemon b=$b" "$tmp/out_daemon_$n" $b
  cat "$tmp/out" "$tmp/err" >"$tmp/timing_$n"
done
expect_grep "daemon, first shape" "$tmp/timing_1" "compile miss"
expect_grep "daemon, second shape" "$tmp/timing_2" "compile miss"
expect_grep "daemon, first shape again" "$tmp/timing_3" "compile hit"
expect_exit 0 "stats" "$jitd" stats --socket "$sock" --json
"$python" - "$tmp/out" <<'EOF' || fail "daemon: expected 2 compiles for 3 runs of 2 shapes"
import json, sys
stats = json.load(open(sys.argv[1]))
assert stats["compiles"] == 2 and stats["compile_errors"] == 0, stats["compiles"]
EOF

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all dynamic-shape CLI checks passed"
