#!/usr/bin/env bash
# The cuda device through the command line without a GPU (issue 14, items 2
# and 6): jitd and its daemon pointed at the fake driver built as a
# libcuda.so.1 ($JITD_CUDA_DRIVER). Its kernels compute nothing, so results
# are not checked; what is: cubins in the daemon's disk cache (a restarted
# daemon loads them without compiling; another GPU's sm or another PTX
# assembler misses), and `jitd run --device=cuda --dump-dir` (the PTX and the
# assembler's register / spill report).
# Usage: jitd_cuda_cli_test.sh PATH/TO/jitd PATH/TO/fake_libcuda_dir   (ctest runs it)
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
expect_grep() {  # expect_grep NAME FILE REGEX
  grep -Eq -- "$3" "$2" || { fail "$1: '$3' not found in $(basename "$2")"; head -20 "$2" | sed 's/^/  /'; }
}

if [ ! -e "$fake/libcuda.so.1" ]; then
  echo "SKIP: no fake libcuda.so.1 in $fake"
  exit 0
fi

cat >"$tmp/add.mlir" <<'EOF'
func.func @main(%x: tensor<64xf32>, %y: tensor<64xf32>) -> tensor<64xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<64xf32>
  %1 = stablehlo.add %0, %y : tensor<64xf32>
  %2 = stablehlo.exponential %1 : tensor<64xf32>
  return %2 : tensor<64xf32>
}
EOF

# --- jitd run --device=cuda --dump-dir (in process, on the fake driver) ---
JITD_CUDA_DRIVER="$fake" "$jitd" run --in-process --device=cuda --random-inputs \
  --dump-dir "$tmp/dumps" "$tmp/add.mlir" >"$tmp/out" 2>"$tmp/err" \
  || { fail "dump-dir: jitd run failed"; sed 's/^/  /' "$tmp/err" | head -10; }
if [ -f "$tmp/dumps/kernels.ptx" ]; then
  expect_grep "dump-dir: PTX" "$tmp/dumps/kernels.ptx" '^\.visible \.entry jitd_k0'
  expect_grep "dump-dir: PTX target" "$tmp/dumps/kernels.ptx" '^\.target sm_90'
else
  fail "dump-dir: no kernels.ptx in $(ls "$tmp/dumps" 2>/dev/null | tr '\n' ' ')"
fi
if [ -f "$tmp/dumps/ptxas.log" ]; then
  # ptxas -v and nvJitLink's info log say the same per kernel.
  expect_grep "dump-dir: registers" "$tmp/dumps/ptxas.log" 'Used [0-9]+ registers'
  expect_grep "dump-dir: spills" "$tmp/dumps/ptxas.log" '[0-9]+ bytes spill stores, [0-9]+ bytes spill loads'
  expect_grep "dump-dir: kernel named" "$tmp/dumps/ptxas.log" "jitd_k0"
else
  fail "dump-dir: no ptxas.log in $(ls "$tmp/dumps" 2>/dev/null | tr '\n' ' ')"
fi
expect_grep "dump-dir: the plan" "$tmp/dumps/program.txt" 'kernel launches'
expect_grep "dump-dir: said" "$tmp/err" "dumps: [0-9]+ files in $tmp/dumps"

# --- cubins in the disk cache across daemon restarts ---
sock="$tmp/jitd.sock"
# start_daemon [ENV=VALUE...]: a daemon on the fake driver with a disk cache.
start_daemon() {
  rm -f "$sock"
  env JITD_CUDA_DRIVER="$fake" "$@" "$jitd" serve --socket "$sock" --cache-dir "$tmp/cache" \
    --default-device cuda --log-level debug 2>>"$tmp/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 600); do [ -S "$sock" ] && return 0; sleep 0.05; done
  fail "the daemon did not come up"; sed 's/^/  /' "$tmp/daemon.log" | tail -5
}
# run_and_stats NAME: runs add.mlir on cuda through the daemon, then keeps
# `jitd stats` in $tmp/stats.
run_and_stats() {
  "$jitd" run --socket "$sock" --no-start-daemon --device=cuda --random-inputs "$tmp/add.mlir" \
    >"$tmp/out" 2>"$tmp/err" || { fail "$1: jitd run failed"; sed 's/^/  /' "$tmp/err" | head -5; }
  "$jitd" stats --socket "$sock" >"$tmp/stats" 2>&1 || fail "$1: jitd stats failed"
}

start_daemon JITD_SEGMENT_BYTES=$((64 << 20))
run_and_stats "cold"
expect_grep "cold: compiled" "$tmp/stats" 'compiles: +1 \(0 failed\), 0 loaded from disk'
# Each client's segment heap is registered with the GPU at attach (the
# stats client's own, while it asks): pinned, counted on the device line.
expect_grep "segments pinned at attach" "$tmp/stats" "device: +cuda: .* of host memory pinned \([0-9.]+ MiB client segments\)"
stop_daemon
ls "$tmp/cache" >/dev/null 2>&1 || fail "cold: no disk cache written"

start_daemon
run_and_stats "warm restart"
# The cubin came from the disk: nothing compiled (no LLVM, no assembler).
expect_grep "warm restart: loaded" "$tmp/stats" 'compiles: +0 \(0 failed\), 1 loaded from disk'
# The default segment (the 1 GiB buffer quota + 64 MiB, sparse) is past the
# 1 GiB cap on pinned memory: not pinned whole at attach (the stats
# client's own, which runs nothing, holds no pinned memory).
if grep -Eq "\([1-9][0-9.]* [KMG]iB client segments\)" "$tmp/stats"; then
  fail "default segments are not pinned at attach"; grep "device:" "$tmp/stats" | sed 's/^/  /'
fi
# ... but a client that executes on cuda gets its heap's front pinned, as
# far as its buffers reach (64 MiB here), while it is connected.
"$jitd" run --socket "$sock" --no-start-daemon --device=cuda --random-inputs --repeat 1000000 "$tmp/add.mlir" \
  >"$tmp/long.out" 2>&1 &
long_pid=$!
for _ in $(seq 100); do
  "$jitd" stats --socket "$sock" >"$tmp/stats" 2>&1
  grep -Eq "\(64\.0 MiB client segments\)" "$tmp/stats" && break
  sleep 0.1
done
expect_grep "front pinned at the first execute" "$tmp/stats" "device: +cuda: .* of host memory pinned \(64\.0 MiB client segments\)"
kill "$long_pid" 2>/dev/null; wait "$long_pid" 2>/dev/null
expect_grep "the log says why segments are not pinned whole" "$tmp/daemon.log" "client segments are not pinned whole \(pinning [0-9]+ more bytes would pass the cap"
stop_daemon

# A cap raised past it ($JITD_CUDA_MAX_PINNED_BYTES) pins default segments;
# a bad value makes cuda unavailable, saying why.
start_daemon JITD_CUDA_MAX_PINNED_BYTES=$((4 << 30))
run_and_stats "raised pinned cap"
expect_grep "raised cap pins" "$tmp/stats" "device: +cuda: .* of host memory pinned \(1\.[0-9]+ GiB client segments\)"
stop_daemon
JITD_CUDA_DRIVER="$fake" JITD_CUDA_MAX_PINNED_BYTES=lots "$jitd" run --in-process --device=cuda --random-inputs \
  "$tmp/add.mlir" >"$tmp/out" 2>"$tmp/err" && fail "bad pinned cap: jitd run succeeded"
expect_grep "bad pinned cap" "$tmp/err" "JITD_CUDA_MAX_PINNED_BYTES='lots': expected a number of bytes"

# Another GPU (sm_89): the key names the target, so it misses and compiles.
start_daemon JITD_FAKE_CUDA_SM=89
run_and_stats "another sm"
expect_grep "another sm: compiled" "$tmp/stats" 'compiles: +1 \(0 failed\), 0 loaded from disk'
expect_grep "another sm: the miss names the target" "$tmp/daemon.log" "miss: differs in options .*target=sm_89 .*vs cached .*target=sm_90 "
stop_daemon

# Another PTX assembler (the toolchain): a miss too. ptxas when the first
# daemon used nvJitLink, and the other way round.
if grep -q "target=sm_90 [^']* nvjitlink " "$tmp/daemon.log"; then other=ptxas; else other=nvjitlink; fi
start_daemon JITD_PTX_ASSEMBLER=$other
run_and_stats "another assembler"
if grep -q "no PTX assembler\|nvJitLink:" "$tmp/err"; then
  echo "note: $other is not available here; the toolchain miss is not checked"
else
  expect_grep "another assembler: compiled" "$tmp/stats" 'compiles: +1 \(0 failed\), 0 loaded from disk'
  expect_grep "another assembler: the miss names it" "$tmp/daemon.log" "miss: differs in options .*target=sm_90 [^']* $other "
fi
stop_daemon

# The first daemon's entry is still there: sm_90 and its assembler hit again.
start_daemon
run_and_stats "back to sm_90"
expect_grep "back to sm_90: loaded" "$tmp/stats" 'compiles: +0 \(0 failed\), 1 loaded from disk'
stop_daemon

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "jitd_cuda_cli_test: all passed"
