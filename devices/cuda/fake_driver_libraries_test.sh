#!/usr/bin/env bash
# A daemon on jitd's fake driver (the libcuda.so.1 of its tests,
# $JITD_CUDA_DRIVER) runs dot / convolution programs end to end: it takes
# the fake driver's own cuBLASLt / cuDNN tables instead of the real
# libraries (which find no GPU through a fake driver and used to fail every
# library call with CUBLAS_STATUS_NOT_INITIALIZED), and those compute on
# the fake's host-memory device. Results are checked against the cpu
# device (numpy, /usr/bin/python3); `jitd stats` names the tables and the
# PTX -> cubin path.
# Usage: fake_driver_libraries_test.sh PATH/TO/jitd PATH/TO/fake_libcuda_dir   (ctest runs it)
set -uo pipefail

jitd="$1"
fake="$2"
tmp="$(mktemp -d)"
daemon_pid=""
stop_daemon() {
  [ -n "$daemon_pid" ] || return 0
  kill "$daemon_pid" 2>/dev/null
  for _ in $(seq 200); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.05; done
  kill -9 "$daemon_pid" 2>/dev/null
  wait "$daemon_pid" 2>/dev/null
  daemon_pid=""
}
trap 'stop_daemon; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if [ ! -e "$fake/libcuda.so.1" ]; then
  echo "SKIP: no fake libcuda.so.1 in $fake"
  exit 0
fi
python=/usr/bin/python3
if ! "$python" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: no numpy in $python"
  exit 0
fi

# A batched dot cuBLASLt reads in place, and an NCHW / OIHW convolution
# cuDNN reads in place: library calls only, no kernel (the fake's kernels
# compute nothing).
cat >"$tmp/dot.mlir" <<'MLIR'
func.func @main(%a: tensor<3x8x16xf32>, %b: tensor<3x16x4xf32>) -> tensor<3x8x4xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [HIGHEST, HIGHEST] : (tensor<3x8x16xf32>, tensor<3x16x4xf32>) -> tensor<3x8x4xf32>
  return %0 : tensor<3x8x4xf32>
}
MLIR
cat >"$tmp/conv.mlir" <<'MLIR'
func.func @main(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x9x9xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]} : (tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x9x9xf32>
  return %0 : tensor<2x4x9x9xf32>
}
MLIR

sock="$tmp/jitd.sock"
# Small problems through the libraries too (the device gives them jitd's
# exact kernels otherwise).
env JITD_CUDA_DRIVER="$fake" JITD_CUDA_LIBRARY_MIN_MULTIPLY_ADDS=0 "$jitd" serve --socket "$sock" --cache-dir "$tmp/cache" --default-device cuda \
  2>>"$tmp/daemon.log" &
daemon_pid=$!
for _ in $(seq 600); do [ -S "$sock" ] && break; sleep 0.05; done
[ -S "$sock" ] || { fail "the daemon did not come up"; tail -5 "$tmp/daemon.log"; exit 1; }

for program in dot conv; do
  if ! "$jitd" run --socket "$sock" --no-start-daemon --device=cuda --random-inputs --seed 3 \
      -o "$tmp/$program.cuda" "$tmp/$program.mlir" >"$tmp/$program.out" 2>"$tmp/$program.err"; then
    fail "$program: jitd run on the fake driver failed"
    sed 's/^/  /' "$tmp/$program.err" | head -5
    continue
  fi
  if ! "$jitd" run --in-process --device=cpu --random-inputs --seed 3 \
      -o "$tmp/$program.cpu" "$tmp/$program.mlir" >/dev/null 2>"$tmp/$program.cpu.err"; then
    fail "$program: jitd run on cpu failed"
    continue
  fi
  "$python" - "$tmp/$program.cuda/result_0.npy" "$tmp/$program.cpu/result_0.npy" <<'PY' || fail "$program: results differ from cpu's"
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
assert got.shape == want.shape, (got.shape, want.shape)
assert np.abs(want).max() > 0.1, "a result of zeros proves nothing"
if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
    print("  largest difference", np.abs(got - want).max())
    sys.exit(1)
PY
done

"$jitd" stats --socket "$sock" >"$tmp/stats" 2>&1 || fail "jitd stats failed"
grep -Eq "libraries: +cuBLASLt .*the fake driver's tables" "$tmp/stats" \
  || { fail "stats: the fake driver's library tables not named"; grep -E "libraries|ptx" "$tmp/stats" | sed 's/^/  /'; }
grep -Eq "ptx: +(nvjitlink|ptxas|the driver's JIT)" "$tmp/stats" \
  || { fail "stats: no ptx line"; sed 's/^/  /' "$tmp/stats" | head -20; }
stop_daemon

if [ "$failures" -ne 0 ]; then
  echo "fake_driver_libraries_test: $failures failure(s)"
  exit 1
fi
echo "fake_driver_libraries_test: passed"
