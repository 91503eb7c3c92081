#!/usr/bin/env bash
# Tests the `jitd` command line: exit codes, messages, fmt and check.
# Usage: jitd_cli_test.sh PATH/TO/jitd PATH/TO/examples   (ctest runs it)
set -uo pipefail

jitd="$1"
examples="$2"
tmp="$(mktemp -d)"
# The daemon that `jitd run` starts below (its pid is in jitd.pid beside the
# socket) is always stopped, whatever happens.
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

# expect_exit CODE NAME CMD...: runs CMD, keeps stdout/stderr in $tmp/out, $tmp/err.
expect_exit() {
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

# --- help and usage ---
expect_exit 0 "--help" "$jitd" --help
expect_grep "--help" "$tmp/out" "fmt"
expect_grep "--help" "$tmp/out" "check"
expect_grep "--help" "$tmp/out" "JITD_CPU_THREADS"
grep -q '^  run ' <<< "$(grep -A1 '^Running programs:' "$tmp/out" | tail -1)" || fail "--help: run is not listed first"
grep -q 'reference interpreter\.$' "$tmp/out" && fail "--help: describes the tool as the interpreter"
expect_exit 0 "fmt --help" "$jitd" fmt --help
expect_grep "fmt --help" "$tmp/out" "--generic"
expect_exit 0 "check --help" "$jitd" check --help
expect_exit 0 "run --help" "$jitd" run --help
expect_grep "run --help" "$tmp/out" "--trace FILE.json"
expect_grep "run --help" "$tmp/out" "progress line"
expect_exit 0 "--version" "$jitd" --version
expect_grep "--version" "$tmp/out" "^jitd [0-9]"
expect_exit 2 "no arguments" "$jitd"
expect_exit 2 "unknown subcommand" "$jitd" frobnicate
expect_exit 2 "fmt without file" "$jitd" fmt
expect_exit 2 "check without file" "$jitd" check

# --- read errors ---
# A binary file: the error shows the offending byte escaped, never raw.
printf '\177ELF\002\001\001' >"$tmp/binary.mlir"
expect_exit 1 "check a binary file" "$jitd" check "$tmp/binary.mlir"
expect_grep "check a binary file" "$tmp/err" "binary.mlir:1:1: .*got '\\\\x7f'"
LC_ALL=C grep -q "$(printf '\177')" "$tmp/err" && fail "check a binary file: a raw byte in the message"
expect_exit 2 "missing file" "$jitd" check "$tmp/nope.mlir"
expect_grep "missing file" "$tmp/err" "nope.mlir.*No such file"
expect_exit 2 "directory" "$jitd" fmt "$tmp"
expect_grep "directory" "$tmp/err" "is a directory"

# --- opt: compiler passes ---
cat >"$tmp/opt.mlir" <<'MLIR'
func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = call @helper(%a) : (tensor<4xi32>) -> tensor<4xi32>
  %c = stablehlo.constant dense<2> : tensor<4xi32>
  %1 = stablehlo.multiply %c, %c : tensor<4xi32>
  %2 = stablehlo.add %0, %1 : tensor<4xi32>
  return %2 : tensor<4xi32>
}
func.func private @helper(%x: tensor<4xi32>) -> tensor<4xi32> {
  %z = stablehlo.constant dense<0> : tensor<4xi32>
  %0 = stablehlo.add %x, %z : tensor<4xi32>
  return %0 : tensor<4xi32>
}
MLIR
expect_exit 0 "opt --help" "$jitd" opt --help
expect_grep "opt --help" "$tmp/out" "fold-constants"
expect_exit 0 "opt default" "$jitd" opt --verify-each --stats --dump-dir="$tmp/dumps" "$tmp/opt.mlir"
expect_grep "opt default" "$tmp/out" "dense<4> : tensor<4xi32>"
expect_grep "opt default" "$tmp/err" "opt.mlir: 8 ops -> 3 ops \(5 removed\), pipeline"
grep -q "@helper" "$tmp/out" && fail "opt default: @helper was not inlined and removed"
[ -s "$tmp/dumps/000-input.mlir" ] && [ -s "$tmp/dumps/007-dce.mlir" ] ||
  fail "opt --dump-dir: dumps missing: $(ls "$tmp/dumps" 2>/dev/null | tr '\n' ' ')"
expect_exit 0 "opt dump reparses" "$jitd" check "$tmp/dumps/004-fold-constants.mlir"
expect_exit 0 "opt --passes" "$jitd" opt --passes=inline "$tmp/opt.mlir"
expect_grep "opt --passes" "$tmp/out" "stablehlo.multiply"
expect_exit 2 "opt unknown pass" "$jitd" opt --passes=inline,frobnicate "$tmp/opt.mlir"
expect_grep "opt unknown pass" "$tmp/err" "unknown pass 'frobnicate'"
printf 'func.func @main() -> tensor<f32> {\n  %%0 = stablehlo.constant dense<1> : tensor<i32>\n  return %%0 : tensor<i32>\n}\n' >"$tmp/bad_opt.mlir"
expect_exit 1 "opt invalid program" "$jitd" opt "$tmp/bad_opt.mlir"
expect_grep "opt invalid program" "$tmp/err" "bad_opt.mlir:3:"

# --- the bundled example ---
softmax="$examples/softmax.mlir"
expect_exit 0 "check example" "$jitd" check "$softmax"
expect_grep "check example" "$tmp/err" "softmax.mlir: ok$"
expect_exit 0 "fmt example" "$jitd" fmt "$softmax"
cp "$tmp/out" "$tmp/p1.mlir"
expect_grep "fmt example" "$tmp/p1.mlir" "stablehlo.reduce"
expect_exit 0 "fmt of fmt" "$jitd" fmt "$tmp/p1.mlir"
cmp -s "$tmp/out" "$tmp/p1.mlir" || fail "fmt is not a fixpoint on the example"
expect_exit 0 "fmt --generic" "$jitd" fmt --generic "$softmax"
cp "$tmp/out" "$tmp/generic.mlir"
expect_grep "fmt --generic" "$tmp/generic.mlir" '"stablehlo.exponential"'
expect_exit 0 "generic back to pretty" "$jitd" fmt "$tmp/generic.mlir"
cmp -s "$tmp/out" "$tmp/p1.mlir" || fail "generic form does not print back to the pretty form"
expect_exit 0 "stdin" "$jitd" check - <"$softmax"
expect_grep "stdin" "$tmp/err" "<stdin>: ok"

# --- several modules in one file ---
{ cat "$softmax"; echo "// -----"; cat "$softmax"; } >"$tmp/two.mlir"
expect_exit 0 "fmt two modules" "$jitd" fmt "$tmp/two.mlir"
[ "$(grep -c '^// -----$' "$tmp/out")" -eq 1 ] || fail "fmt two modules: want one separator line"
[ "$(grep -c '^module' "$tmp/out")" -eq 2 ] || fail "fmt two modules: want two modules"

# --- invalid programs: exit 1, FILE:LINE:COL: message ---
cat >"$tmp/syntax.mlir" <<'EOF'
func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32
  return %0 : tensor<2xf32>
}
EOF
expect_exit 1 "syntax error" "$jitd" fmt "$tmp/syntax.mlir"
expect_grep "syntax error" "$tmp/err" "^$tmp/syntax.mlir:[0-9]+:[0-9]+: "
[ -s "$tmp/out" ] && fail "syntax error: fmt printed something"

cat >"$tmp/verify.mlir" <<'EOF'
func.func @main(%arg0: tensor<2xf32>, %arg1: tensor<3xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
EOF
expect_exit 1 "verify error" "$jitd" check "$tmp/verify.mlir"
expect_grep "verify error" "$tmp/err" "^$tmp/verify.mlir:2:[0-9]+: .*stablehlo.add"

cat >"$tmp/second.mlir" <<'EOF'
func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  return %arg0 : tensor<2xf32>
}
// -----
func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  return %arg0 : tensor<2xi32>
}
EOF
expect_exit 1 "error in second module" "$jitd" check "$tmp/second.mlir"
expect_grep "error in second module" "$tmp/err" "^$tmp/second.mlir:6:[0-9]+: "

expect_exit 1 "check mixed" "$jitd" check "$softmax" "$tmp/syntax.mlir"
expect_grep "check mixed" "$tmp/err" "softmax.mlir: ok$"
expect_grep "check mixed" "$tmp/err" "syntax.mlir:[0-9]+:[0-9]+: "
expect_exit 2 "check mixed with missing" "$jitd" check "$softmax" "$tmp/syntax.mlir" "$tmp/nope.mlir"

# Arbitrary bytes: an error, never a crash.
head -c 4096 /dev/urandom >"$tmp/random.mlir"
expect_exit 1 "random bytes" "$jitd" check "$tmp/random.mlir"

# --- conformance ---
expect_exit 0 "conformance example" "$jitd" conformance --device=interpreter "$softmax"
expect_grep "conformance example" "$tmp/out" "^1 passed, 0 failed, 0 skipped$"
expect_exit 2 "conformance unknown device" "$jitd" conformance --device=tpu "$softmax"
expect_grep "conformance unknown device" "$tmp/err" "unknown device 'tpu'.*interpreter"
expect_exit 2 "conformance missing path" "$jitd" conformance "$tmp/nope"
cat >"$tmp/failing.mlir" <<'MLIR'
func.func public @main() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %1 = stablehlo.add %0, %0 : tensor<2xi32>
  check.expect_eq_const %1, dense<[2, 5]> : tensor<2xi32>
  return
}
MLIR
expect_exit 1 "conformance failing check" "$jitd" conformance --report="$tmp/report.json" "$tmp/failing.mlir"
expect_grep "conformance failing check" "$tmp/out" "failing.mlir: check: .*element 1 \[1\]: actual 4, expected 5"
expect_grep "conformance failing check" "$tmp/out" "^0 passed, 1 failed, 0 skipped$"
expect_grep "conformance report" "$tmp/report.json" "\"result\": \"check\""
echo "failing.mlir # known" >"$tmp/expected.txt"
expect_exit 0 "conformance expected failure" "$jitd" conformance --expected-failures="$tmp/expected.txt" "$tmp/failing.mlir"
expect_exit 0 "conformance directory" "$jitd" conformance --jobs=2 "$(dirname "$softmax")"

# --- run (in process) ---
shared="$examples/../../shared"
expect_exit 0 "run example" "$jitd" run --in-process "$softmax"
expect_grep "run example" "$tmp/out" "^result 0: tensor<2x4xf32>$"
expect_grep "run example" "$tmp/out" "^\[\[0\.0320586"
expect_grep "run example" "$tmp/out" "^checks: 1 passed, 0 failed$"
expect_grep "run example" "$tmp/out" "^timing: parse\+verify [0-9.]+ (us|ms|s), compile [0-9.]+ (us|ms|s), execute [0-9.]+ (us|ms|s)"
expect_exit 0 "run --repeat" "$jitd" run --in-process --repeat 5 --warmup 2 "$examples/softmax.mlir"
expect_grep "run --repeat" "$tmp/out" "^repeat: 5 executes \(after 2 warmup\), execute min [0-9.]+ (us|ms|s), p50 [0-9.]+ (us|ms|s), p90 "
expect_exit 2 "run --repeat 0" "$jitd" run --in-process --repeat 0 "$examples/softmax.mlir"
expect_exit 2 "run unknown device" "$jitd" run --in-process --device=tpu "$softmax"
expect_grep "run unknown device" "$tmp/err" "unknown device 'tpu'"
expect_exit 2 "run two modules" "$jitd" run --in-process "$tmp/two.mlir"
expect_grep "run two modules" "$tmp/err" "has 2 modules.*--module=N"
expect_exit 0 "run --module" "$jitd" run --in-process --module=1 "$tmp/two.mlir"
expect_exit 1 "run invalid program" "$jitd" run --in-process "$tmp/syntax.mlir"
expect_grep "run invalid program" "$tmp/err" "syntax.mlir:[0-9]+:[0-9]+: "

# --output writes result_<i>.npy; jitd reads it back as an input.
expect_exit 0 "run --output" "$jitd" run --in-process --output="$tmp/out_dir" "$softmax"
[ -s "$tmp/out_dir/result_0.npy" ] || fail "run --output: no result_0.npy"
grep -q 'N   U   M   P   Y' <<< "$(head -c 6 "$tmp/out_dir/result_0.npy" | od -c)" || fail "run --output: not an .npy file"
cat >"$tmp/args.mlir" <<'MLIR'
func.func @main(%arg0: tensor<2x4xf32>, %scale: tensor<i32>) -> (tensor<2x4xf32>, tensor<i32>) {
  %0 = stablehlo.add %arg0, %arg0 : tensor<2x4xf32>
  %1 = stablehlo.multiply %scale, %scale : tensor<i32>
  return %0, %1 : tensor<2x4xf32>, tensor<i32>
}
MLIR
# Raw .npy bytes, written without numpy: DESCR SHAPE HEXDATA FILE.
make_npy() {
  /usr/bin/python3 - "$@" <<'PY'
import sys
descr, shape, data, path = sys.argv[1:5]
d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
d += ' ' * ((64 - (10 + len(d) + 1) % 64) % 64) + '\n'
open(path, 'wb').write(b'\x93NUMPY\x01\x00' + len(d).to_bytes(2, 'little') + d.encode() + bytes.fromhex(data))
PY
}
make_npy '<i4' '()' '07000000' "$tmp/seven.npy"
expect_exit 0 "run --input by index and name" "$jitd" run --in-process \
  --input 0="$tmp/out_dir/result_0.npy" --input %scale="$tmp/seven.npy" --output="$tmp/out2" "$tmp/args.mlir"
expect_grep "run --input by index and name" "$tmp/out" "^result 1: tensor<i32> = 49$"
expect_grep "run --input by index and name" "$tmp/out" "^\[\[0\.06411721"
[ -s "$tmp/out2/result_1.npy" ] || fail "run --output: no result_1.npy"
expect_exit 2 "run missing input" "$jitd" run --in-process --input 0="$tmp/out_dir/result_0.npy" "$tmp/args.mlir"
expect_grep "run missing input" "$tmp/err" "needs 1 more argument.*--random-inputs"
expect_grep "run missing input" "$tmp/err" "argument 1 \(%scale\): tensor<i32>"
expect_exit 2 "run wrong shape" "$jitd" run --in-process --input 0="$tmp/seven.npy" --input 1="$tmp/seven.npy" "$tmp/args.mlir"
expect_grep "run wrong shape" "$tmp/err" "seven.npy: argument 0 \(%arg0\) of @main is tensor<2x4xf32>.*holds tensor<i32>"
expect_exit 2 "run unknown argument" "$jitd" run --in-process --input %nope="$tmp/seven.npy" "$tmp/args.mlir"
expect_grep "run unknown argument" "$tmp/err" "no argument named '%nope'.*%arg0, %scale"
expect_exit 2 "run argument index out of range" "$jitd" run --in-process --input 5="$tmp/seven.npy" "$tmp/args.mlir"
make_npy '>i4' '()' '00000007' "$tmp/big_endian.npy"
expect_exit 2 "run big-endian input" "$jitd" run --in-process --input 1="$tmp/big_endian.npy" --random-inputs "$tmp/args.mlir"
expect_grep "run big-endian input" "$tmp/err" "big_endian.npy: big-endian data"
make_npy '<i4' '(2,)' '0700' "$tmp/short.npy"
expect_exit 2 "run truncated input" "$jitd" run --in-process --input 1="$tmp/short.npy" --random-inputs "$tmp/args.mlir"
expect_grep "run truncated input" "$tmp/err" "short.npy: truncated data"
expect_exit 2 "run missing npy" "$jitd" run --in-process --input 1="$tmp/nope.npy" --random-inputs "$tmp/args.mlir"
expect_grep "run missing npy" "$tmp/err" "nope.npy: cannot open"
expect_exit 0 "run --random-inputs" "$jitd" run --in-process --random-inputs --seed=3 "$tmp/args.mlir"
cp "$tmp/out" "$tmp/random1.txt"
"$jitd" run --in-process --random-inputs --seed=3 "$tmp/args.mlir" | grep -v '^timing' >"$tmp/random2.txt"
grep -v '^timing' "$tmp/random1.txt" | cmp -s - "$tmp/random2.txt" || fail "run --random-inputs: not deterministic for one seed"

# Results .npy cannot hold: nothing written, a clear message.
cat >"$tmp/tuple.mlir" <<'MLIR'
func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tuple<tensor<2xf32>>) {
  %0 = stablehlo.tuple %x : tuple<tensor<2xf32>>
  return %x, %0 : tensor<2xf32>, tuple<tensor<2xf32>>
}
MLIR
expect_exit 2 "run --output tuple" "$jitd" run --in-process --random-inputs --output="$tmp/out3" "$tmp/tuple.mlir"
expect_grep "run --output tuple" "$tmp/err" "result 1 is a tuple.*no .npy form"
[ -e "$tmp/out3/result_0.npy" ] && fail "run --output tuple: wrote result_0.npy anyway"
cat >"$tmp/bf16.mlir" <<'MLIR'
func.func @main(%x: tensor<2xbf16>) -> tensor<2xbf16> {
  return %x : tensor<2xbf16>
}
MLIR
expect_exit 2 "run --output bf16" "$jitd" run --in-process --random-inputs --output="$tmp/out4" "$tmp/bf16.mlir"
expect_grep "run --output bf16" "$tmp/err" "bf16 has no NumPy dtype.*stablehlo.convert"
cat >"$tmp/forever.mlir" <<'MLIR'
func.func @main() -> tensor<i32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %r = stablehlo.while(%i = %c) : tensor<i32>
   cond {
    %t = stablehlo.constant dense<true> : tensor<i1>
    stablehlo.return %t : tensor<i1>
  } do {
    stablehlo.return %i : tensor<i32>
  }
  return %r : tensor<i32>
}
MLIR
expect_exit 1 "run --timeout" "$jitd" run --in-process --timeout=0.2 "$tmp/forever.mlir"
expect_grep "run --timeout" "$tmp/err" "timed out after 0.2 s"

# With numpy (Debian's /usr/bin/python3, when installed): inputs written by
# numpy, results read back by numpy.
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  /usr/bin/python3 -c "
import numpy as np
np.save('$tmp/np_x.npy', np.arange(8, dtype=np.float32).reshape(2, 4))
np.save('$tmp/np_s.npy', np.int32(-3))
np.save('$tmp/np_wrong.npy', np.zeros((4, 2), np.float32))"
  expect_exit 0 "run numpy inputs" "$jitd" run --in-process --input 0="$tmp/np_x.npy" \
    --input 1="$tmp/np_s.npy" --output="$tmp/np_out" "$tmp/args.mlir"
  expect_grep "run numpy inputs" "$tmp/out" "^\[\[ ?0\. +2\. +4\. +6\. *\]"
  /usr/bin/python3 -c "
import numpy as np
a = np.load('$tmp/np_out/result_0.npy'); b = np.load('$tmp/np_out/result_1.npy')
assert a.dtype == np.float32 and (a == 2 * np.arange(8).reshape(2, 4)).all(), a
assert b.shape == () and b.dtype == np.int32 and b == 9, b" || fail "run numpy outputs: numpy disagrees"
  expect_exit 2 "run numpy wrong shape" "$jitd" run --in-process --input 0="$tmp/np_wrong.npy" \
    --input 1="$tmp/np_s.npy" "$tmp/args.mlir"
  expect_grep "run numpy wrong shape" "$tmp/err" "numpy shape \(2, 4\), dtype <f4\).*numpy shape \(4, 2\)"
else
  echo "SKIP: run with numpy-written inputs (/usr/bin/python3 has no numpy; apt-get install python3-numpy)"
fi

# A real model with random weights (slow on the interpreter: ~30 s).
chess="$shared/models/searchless_chess_9m.mlir"
if [ -f "$chess" ]; then
  expect_exit 0 "run chess model" "$jitd" run --in-process --random-inputs "$chess"
  expect_grep "run chess model" "$tmp/out" "^result 0: tensor<"
  expect_grep "run chess model" "$tmp/out" "min .* max .* mean "
  expect_grep "run chess model" "$tmp/out" "^timing: "
else
  echo "SKIP: run chess model ($chess not found)"
fi

# --- run through the daemon, stats ---
# A daemon that cannot start: the error says why, from its log.
mkdir -p "$tmp/bad_daemon" && touch "$tmp/bad_daemon/jitd.sock"
expect_exit 2 "run, daemon fails to start" "$jitd" run --socket "$tmp/bad_daemon/jitd.sock" "$softmax"
expect_grep "run, daemon fails to start" "$tmp/err" "exited at start.*jitd.log ends with"
expect_grep "run, daemon fails to start" "$tmp/err" "is not a socket"
sock="$tmp/daemon/jitd.sock"
export XDG_CACHE_HOME="$tmp/xdg_cache"  # the started daemon's disk cache: empty
expect_exit 2 "stats without daemon" "$jitd" stats --socket "$sock"
expect_grep "stats without daemon" "$tmp/err" "no jitd daemon at .*jitd.sock.*never starts one"
expect_exit 2 "run --no-start-daemon" "$jitd" run --no-start-daemon --socket "$sock" "$softmax"
expect_grep "run --no-start-daemon" "$tmp/err" "no jitd daemon at .*jitd.sock.*--no-start-daemon: none was started"
[ -e "$tmp/daemon/jitd.pid" ] && fail "run --no-start-daemon: started a daemon anyway"
expect_exit 0 "run via daemon (starts it)" "$jitd" run --socket "$sock" "$softmax"
expect_grep "run via daemon (starts it)" "$tmp/out" "^timing: .*compile miss .*daemon .*jitd.sock"
expect_grep "run via daemon (starts it)" "$tmp/out" "^checks: [1-9][0-9]* passed, 0 failed"
[ -s "$tmp/daemon/jitd.pid" ] || fail "run via daemon: no jitd.pid beside the socket"
expect_exit 0 "run via daemon again" "$jitd" run --socket "$sock" "$softmax"
expect_grep "run via daemon again" "$tmp/out" "^timing: .*compile hit "
expect_exit 0 "stats after two runs" "$jitd" stats --socket "$sock" --json
expect_grep "stats after two runs" "$tmp/out" '"compiles":1,.*"memory_cache":\{"hits":1,"misses":1,'
expect_exit 0 "run via daemon, --repeat" "$jitd" run --socket "$sock" --repeat 4 "$softmax"
expect_grep "run via daemon, --repeat" "$tmp/out" "^repeat: 4 executes, execute min .*; round trip min [0-9.]+ (us|ms|s), p50 "
expect_exit 0 "run via daemon, JITD_SOCKET" env JITD_SOCKET="$sock" "$jitd" run --no-start-daemon "$softmax"
expect_grep "run via daemon, JITD_SOCKET" "$tmp/out" "compile hit "
# Through the daemon and in process: the same results for the same seed.
expect_exit 0 "run via daemon, random inputs" "$jitd" run --socket "$sock" --random-inputs --seed=3 "$tmp/args.mlir"
# A miss is explained only against an entry of the same program (entry name
# and signature); the cached softmax is another program.
grep -q '^cache miss: ' "$tmp/out" &&
  fail "run via daemon, random inputs: a miss explained against another program"
grep -Ev '^(timing|cache miss)' "$tmp/out" >"$tmp/daemon_random.txt"
grep -v '^timing' "$tmp/random1.txt" | cmp -s - "$tmp/daemon_random.txt" ||
  fail "run via daemon: results differ from --in-process for one seed"
# Tuples and tokens (issue 16, item 6): a tuple argument, a nested tuple
# result holding a token, and a token result print the same through the
# daemon as in process (a daemon of their own: the stats below count the
# main one's compiles).
tsock="$tmp/tdaemon/jitd.sock"
cat >"$tmp/tuples.mlir" <<'MLIR'
func.func @main(%p: tuple<tensor<2xf32>, tensor<i32>>) -> (tuple<tensor<i32>, tuple<tensor<2xf32>, !stablehlo.token>>, !stablehlo.token) {
  %a = stablehlo.get_tuple_element %p[0] : (tuple<tensor<2xf32>, tensor<i32>>) -> tensor<2xf32>
  %b = stablehlo.get_tuple_element %p[1] : (tuple<tensor<2xf32>, tensor<i32>>) -> tensor<i32>
  %k = stablehlo.create_token : !stablehlo.token
  %n = stablehlo.negate %a : tensor<2xf32>
  %in = stablehlo.tuple %n, %k : tuple<tensor<2xf32>, !stablehlo.token>
  %r = stablehlo.tuple %b, %in : tuple<tensor<i32>, tuple<tensor<2xf32>, !stablehlo.token>>
  return %r, %k : tuple<tensor<i32>, tuple<tensor<2xf32>, !stablehlo.token>>, !stablehlo.token
}
MLIR
expect_exit 0 "run tuples in process" "$jitd" run --in-process --random-inputs --seed=5 "$tmp/tuples.mlir"
grep -v '^timing' "$tmp/out" >"$tmp/tuples_in.txt"
expect_exit 0 "run tuples via daemon" "$jitd" run --socket "$tsock" --random-inputs --seed=5 "$tmp/tuples.mlir"
expect_grep "run tuples via daemon" "$tmp/out" '^result 0\.1\.1: !stablehlo\.token$'
expect_grep "run tuples via daemon" "$tmp/out" '^result 1: !stablehlo\.token$'
grep -Ev '^(timing|cache miss)' "$tmp/out" | cmp -s - "$tmp/tuples_in.txt" ||
  fail "run tuples via daemon: output differs from --in-process"
"$jitd" stop --socket "$tsock" >/dev/null 2>&1 || fail "run tuples via daemon: jitd stop failed"
# The same program respelled (a comment, other value names) is a hit; a
# changed op is a miss explained against it (issue 15, item 5).
{ echo "// respelled"; sed 's/%0/%sum/g; s/%1/%square/g' "$tmp/args.mlir"; } >"$tmp/args_respelled.mlir"
expect_exit 0 "run via daemon, respelled" "$jitd" run --socket "$sock" --random-inputs --seed=3 "$tmp/args_respelled.mlir"
expect_grep "run via daemon, respelled" "$tmp/out" "^timing: .*compile hit "
sed 's/stablehlo.add %arg0, %arg0/stablehlo.subtract %arg0, %arg0/' "$tmp/args.mlir" >"$tmp/args_changed.mlir"
expect_exit 0 "run via daemon, changed op" "$jitd" run --socket "$sock" --random-inputs --seed=3 "$tmp/args_changed.mlir"
expect_grep "run via daemon, changed op" "$tmp/out" "^cache miss: differs in program_hash \\(same entry '@main"
expect_exit 0 "run via daemon --output" "$jitd" run --socket "$sock" --random-inputs --output="$tmp/out_d" "$tmp/args.mlir"
[ -s "$tmp/out_d/result_0.npy" ] || fail "run via daemon --output: no result_0.npy"
expect_exit 2 "run via daemon, missing input" "$jitd" run --socket "$sock" "$tmp/args.mlir"
expect_grep "run via daemon, missing input" "$tmp/err" "needs .* more argument"
expect_exit 1 "run via daemon --timeout" "$jitd" run --socket "$sock" --timeout=0.2 "$tmp/forever.mlir"
expect_grep "run via daemon --timeout" "$tmp/err" "timed out after 0.2 s"
expect_exit 0 "stats" "$jitd" stats --socket "$sock"
expect_grep "stats" "$tmp/out" "^  compiles: +4 \(0 failed\)"
expect_grep "stats" "$tmp/out" "^  memory cache: +[0-9]+ hits"
expect_exit 0 "stats --json" "$jitd" stats --socket "$sock" --json
expect_grep "stats --json" "$tmp/out" '^\{.*"compiles":4,'
expect_exit 0 "stats --keys" "$jitd" stats --socket "$sock" --keys
expect_grep "stats --keys" "$tmp/out" "cache entries \(4\)"
expect_grep "stats --keys" "$tmp/out" "^    program +device +hits +compile +bytes +last use +fingerprint +arguments"
expect_grep "stats --keys" "$tmp/out" "^    @main +cpu +[0-9]+ +[0-9.]+ [mu]?s +[0-9.]+ [KM]?i?B +[0-9.]+ [mu]?s ago +[0-9a-f]{32}  tensor<2x4xf32>, tensor<i32>"
# dense_resource weights through the daemon: --resource-seed is honoured and
# gives what --in-process gives for the same seed.
cat >"$tmp/resource.mlir" <<'MLIR'
func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %w = stablehlo.constant dense_resource<weights> : tensor<4xf32>
  %0 = stablehlo.add %arg0, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
MLIR
expect_exit 0 "run resource in process" "$jitd" run --in-process --random-inputs --resource-seed=5 "$tmp/resource.mlir"
grep -v '^timing' "$tmp/out" >"$tmp/resource_local.txt"
expect_exit 0 "run resource via daemon" "$jitd" run --socket "$sock" --random-inputs --resource-seed=5 "$tmp/resource.mlir"
grep -Ev '^(timing|cache miss)' "$tmp/out" | cmp -s - "$tmp/resource_local.txt" ||
  fail "run via daemon --resource-seed: results differ from --in-process"
expect_exit 0 "run resource via daemon, other seed" "$jitd" run --socket "$sock" --random-inputs --resource-seed=6 "$tmp/resource.mlir"
grep -Ev '^(timing|cache miss)' "$tmp/out" | cmp -s - "$tmp/resource_local.txt" &&
  fail "run via daemon --resource-seed: another seed gave the same weights"
# The default fill is weights; uniform differs, through the daemon too.
expect_exit 0 "run resource, uniform fill" "$jitd" run --in-process --random-inputs --resource-seed=5 --resource-fill=uniform "$tmp/resource.mlir"
grep -v '^timing' "$tmp/out" >"$tmp/resource_uniform.txt"
cmp -s "$tmp/resource_uniform.txt" "$tmp/resource_local.txt" &&
  fail "run --resource-fill=uniform: same results as the weights fill"
expect_exit 0 "run resource, uniform fill via daemon" "$jitd" run --socket "$sock" --random-inputs --resource-seed=5 --resource-fill=uniform "$tmp/resource.mlir"
grep -Ev '^(timing|cache miss)' "$tmp/out" | cmp -s - "$tmp/resource_uniform.txt" ||
  fail "run via daemon --resource-fill=uniform: results differ from --in-process"
# A run whose results are all NaN/Inf says so, with a hint.
cat >"$tmp/nan.mlir" <<'MLIR'
func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<3xf32>
  %0 = stablehlo.divide %z, %z : tensor<3xf32>
  %1 = stablehlo.add %0, %arg0 : tensor<3xf32>
  return %1 : tensor<3xf32>
}
MLIR
expect_exit 0 "run all-NaN results" "$jitd" run --in-process --random-inputs "$tmp/nan.mlir"
expect_grep "run all-NaN results" "$tmp/err" "every floating-point result is NaN or Inf.*--seed"
expect_exit 0 "run all-NaN results via daemon" "$jitd" run --socket "$sock" --random-inputs "$tmp/nan.mlir"
expect_grep "run all-NaN results via daemon" "$tmp/err" "every floating-point result is NaN or Inf"
expect_exit 0 "run finite results" "$jitd" run --in-process --random-inputs "$tmp/resource.mlir"
grep -q "NaN or Inf" "$tmp/err" && fail "run finite results: printed the NaN hint"
# --random-inputs keeps gather indices within the table (ids 0..2 of 3 rows:
# every result row is one of the table's rows, none is clamped garbage) and
# integers that index nothing at 0 or 1.
cat >"$tmp/take.mlir" <<'MLIR'
func.func public @main(%ids: tensor<64xi32>, %mask: tensor<8xi32>) -> (tensor<64xi32>, tensor<8xi32>) {
  %t = stablehlo.constant dense<[10, 20, 30]> : tensor<3xi32>
  %i = stablehlo.reshape %ids : (tensor<64xi32>) -> tensor<64x1xi32>
  %g = "stablehlo.gather"(%t, %i) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1>}> : (tensor<3xi32>, tensor<64x1xi32>) -> tensor<64xi32>
  %d = stablehlo.subtract %g, %ids : tensor<64xi32>
  return %d, %mask : tensor<64xi32>, tensor<8xi32>
}
MLIR
expect_exit 0 "run random indices" "$jitd" run --in-process --random-inputs "$tmp/take.mlir"
expect_grep "run random indices" "$tmp/out" "^result 1: tensor<8xi32> = \[[01] [01] [01] [01] [01] [01] [01] [01]\]"
grep '^result 0: ' "$tmp/out" | sed 's/.*= //' | tr -d '[]' | tr ' ' '\n' |
  grep -Ev '^(10|19|28)$' && fail "run random indices: an id outside the table (10, 19, 28 expected)"
expect_exit 2 "run resource, unknown fill" "$jitd" run --in-process --resource-fill=normal "$tmp/resource.mlir"
expect_exit 0 "stats, clients and percentiles" "$jitd" stats --socket "$sock"
expect_grep "stats, clients and percentiles" "$tmp/out" "^  execute time: p50 [0-9.]+ (us|ms|s), p90 [0-9.]+ (us|ms|s), p99 [0-9.]+ (us|ms|s)"
expect_grep "stats, clients and percentiles" "$tmp/out" "^  compile time: p50 [0-9.]+ (us|ms|s)"
expect_grep "stats, clients and percentiles" "$tmp/out" "^  clients \(1\):"
expect_grep "stats, clients and percentiles" "$tmp/out" "jitd stats"
expect_exit 0 "stats --prometheus" "$jitd" stats --socket "$sock" --prometheus
expect_grep "stats --prometheus" "$tmp/out" "^# TYPE jitd_compiles_total counter$"
expect_grep "stats --prometheus" "$tmp/out" "^jitd_executes_total [1-9][0-9]*$"
expect_grep "stats --prometheus" "$tmp/out" "^jitd_execute_latency_seconds\{quantile=\"0.5\"\} [0-9.e-]+$"
# --profile: rows with their share of the execute and their call site
# (FILE:line:col), library calls among them; through the daemon and here.
cat >"$tmp/loop.mlir" <<'MLIR'
func.func @main(%a: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %x = %a) : tensor<i32>, tensor<32x32xf32>
   cond {
    %n = stablehlo.constant dense<3> : tensor<i32>
    %go = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %go : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %next = stablehlo.add %i, %one : tensor<i32>
    %y = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
    %t = stablehlo.tanh %y : tensor<32x32xf32>
    stablehlo.return %next, %t : tensor<i32>, tensor<32x32xf32>
  }
  return %r#1 : tensor<32x32xf32>
}
MLIR
for where in daemon in-process; do
  if [ "$where" = daemon ]; then flags=(--socket "$sock"); else flags=(--in-process); fi
  expect_exit 0 "run --profile ($where)" "$jitd" run "${flags[@]}" --random-inputs --profile "$tmp/loop.mlir"
  expect_grep "run --profile ($where)" "$tmp/err" "^profile: [0-9]+ rows, slowest first; share of the execute's [0-9.]+ (us|ms|s)"
  expect_grep "run --profile ($where)" "$tmp/err" "^ +time +share +runs +what +where$"
  expect_grep "run --profile ($where)" "$tmp/err" " +[0-9.]+% +x1 +while .* $tmp/loop.mlir:3:3$"
  expect_grep "run --profile ($where)" "$tmp/err" " +[0-9.]+% +x3 +.*dot_general +$tmp/loop.mlir:11:5$"
  expect_grep "run --profile ($where)" "$tmp/err" " +[0-9.]+% +x3 +kernel jitd_k[0-9]+ tanh +$tmp/loop.mlir:12:5$"
done
expect_exit 0 "run --profile (interpreter)" "$jitd" run --in-process --device=interpreter --random-inputs --profile "$tmp/loop.mlir"
expect_grep "run --profile (interpreter)" "$tmp/err" " +[0-9.]+% +x3 +stablehlo.dot_general +$tmp/loop.mlir:11:5$"
# Elided weights fill the same after a daemon restart (the executable then
# comes from the disk cache, its module printed again on other lines) and
# when the program is respelled on other lines (then it is the same entry).
cat >"$tmp/elided.mlir" <<'MLIR'
// weights elided by the exporter
func.func public @main(%x: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %w1 = stablehlo.constant dense_resource<__elided__> : tensor<6xf32>

  %w2 = stablehlo.constant dense_resource<__elided__> : tensor<6xf32>
  %a = stablehlo.multiply %x, %w1 : tensor<6xf32>
  %b = stablehlo.add %x, %w2 : tensor<6xf32>
  return %a, %b : tensor<6xf32>, tensor<6xf32>
}
MLIR
expect_exit 0 "elided weights, first compile" "$jitd" run --socket "$sock" --random-inputs --resource-seed=9 "$tmp/elided.mlir"
expect_grep "elided weights, first compile" "$tmp/out" "^timing: .*compile miss"
grep '^result' "$tmp/out" >"$tmp/elided_first.txt"
stop_daemon
expect_exit 2 "stats after stop" "$jitd" stats --socket "$sock"
expect_exit 0 "elided weights, after a restart" "$jitd" run --socket "$sock" --random-inputs --resource-seed=9 "$tmp/elided.mlir"
grep '^result' "$tmp/out" | cmp -s - "$tmp/elided_first.txt" ||
  fail "elided weights: other values after a daemon restart: $(cat "$tmp/out") vs $(cat "$tmp/elided_first.txt")"
{ printf '\n\n// moved down\n'; sed 's/%w1/%kernel/g' "$tmp/elided.mlir"; } >"$tmp/elided_moved.mlir"
expect_exit 0 "elided weights, respelled" "$jitd" run --socket "$sock" --random-inputs --resource-seed=9 "$tmp/elided_moved.mlir"
expect_grep "elided weights, respelled" "$tmp/out" "^timing: .*compile hit"
grep '^result' "$tmp/out" | cmp -s - "$tmp/elided_first.txt" ||
  fail "elided weights: other values for the program respelled: $(cat "$tmp/out")"
stop_daemon

# --trace: a Chrome trace (Trace Event Format) of the compile's passes and
# every kernel / library call of the execute, valid JSON.
for device in cpu interpreter; do
  expect_exit 0 "run --trace ($device)" "$jitd" run --device=$device --random-inputs --trace="$tmp/trace_$device.json" "$tmp/loop.mlir"
  expect_grep "run --trace ($device)" "$tmp/err" "^trace: [0-9]+ spans in $tmp/trace_$device.json \(open it in https://ui.perfetto.dev"
  /usr/bin/python3 - "$tmp/trace_$device.json" "$device" "$tmp/loop.mlir" <<'PY' || fail "run --trace ($device): the trace is not what it should be"
import json, sys
path, device, program = sys.argv[1:]
doc = json.load(open(path))  # fails on invalid JSON
events = doc["traceEvents"]
spans = [e for e in events if e["ph"] == "X"]
assert all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 and "pid" in e and "tid" in e for e in spans)
names = [e["name"] for e in spans]
assert "parse+verify" in names and "verify" in names, names
assert any(n.startswith("device compile (" + device + ")") for n in names), names
if device == "cpu":
    assert "inline" in names and "cse" in names and "fusion" in names, names  # the passes
assert sum(1 for e in spans if e["cat"] == "execute") == 1
dots = [e for e in spans if "dot_general" in e["name"]]
assert len(dots) == 3, dots  # one per iteration
assert all(e["args"]["call_site"] == program + ":11:5" for e in dots), dots
if device == "cpu":
    assert all(e["cat"] == "library" for e in dots), dots
execute = next(e for e in spans if e["cat"] == "execute")
assert all(execute["ts"] <= e["ts"] and e["ts"] + e["dur"] <= execute["ts"] + execute["dur"] + 1
           for e in dots), "calls lie within their execute"
assert any(e["ph"] == "M" and e["name"] == "process_name" for e in events)
PY
done
expect_exit 2 "run --trace, unwritable" "$jitd" run --random-inputs --trace="$tmp/no/such/dir/t.json" "$tmp/loop.mlir"
expect_grep "run --trace, unwritable" "$tmp/err" "--trace: cannot write '$tmp/no/such/dir/t.json'"

# The progress line: on a terminal (script(1) gives one) a step over a
# second shows "jitd run: executing ... 1.0 s", erased before what follows;
# piped, nothing.
if command -v script >/dev/null 2>&1; then
  script -qec "'$jitd' run --in-process --timeout=1.4 '$tmp/forever.mlir'" /dev/null >"$tmp/tty.out" 2>&1
  grep -q $'\r\033\[Kjitd run: executing \.\.\. 1\.[0-9] s' "$tmp/tty.out" ||
    fail "progress line: none on a terminal: $(od -c "$tmp/tty.out" | head -5)"
  grep -q $'s\r\033\[Kjitd run: .*: timed out after 1.4 s' "$tmp/tty.out" ||
    fail "progress line: not erased before the error: $(od -c "$tmp/tty.out" | tail -5)"
fi
"$jitd" run --in-process --timeout=1.2 "$tmp/forever.mlir" >/dev/null 2>"$tmp/piped.err"
grep -q $'\r' "$tmp/piped.err" && fail "progress line: drawn into a pipe: $(cat -A "$tmp/piped.err")"

# --- serve flags: quotas from flags and the environment ---
qsock="$tmp/quota/jitd.sock"
JITD_MAX_EXECUTE_TIME_MS=1 "$jitd" serve --socket "$qsock" --no-disk-cache --max-executables=1 \
  --log-level=info 2>"$tmp/quota.log" &
qpid=$!
for _ in $(seq 100); do [ -S "$qsock" ] && break; sleep 0.05; done
expect_exit 0 "quota: first program" "$jitd" run --no-start-daemon --socket "$qsock" "$softmax"
expect_exit 1 "quota: execute time from the environment" "$jitd" run --no-start-daemon --socket "$qsock" "$tmp/forever.mlir"
expect_grep "quota: execute time from the environment" "$tmp/err" "max_execute_time.* of 1 ms"
# Without --timeout the message names the daemon's limit, not --timeout.
expect_grep "quota: execute time from the environment" "$tmp/err" "daemon's execution time limit \(jitd serve --max-execute-time-ms\)"
grep -q -e "--timeout" "$tmp/err" && fail "quota: the daemon's limit was reported as --timeout: $(cat "$tmp/err")"
kill "$qpid"; wait "$qpid" 2>/dev/null
expect_grep "quota: the log lists the limits" "$tmp/quota.log" "limits per client: 1 executables, .* execute 1 ms"
expect_exit 0 "serve --help lists the policy flags" "$jitd" serve --help
expect_grep "serve --help lists the policy flags" "$tmp/out" "--allow-uid"
expect_grep "serve --help lists the policy flags" "$tmp/out" "JITD_MAX_COMPILE_TIME_MS"
expect_grep "serve --help lists the policy flags" "$tmp/out" "JITD_TURN_REQUESTS"
# A turn's request count out of range is refused by name, before anything starts.
for bad in 0 abc 99999999999999999999999; do
  expect_exit 2 "serve --turn-requests=$bad" "$jitd" serve --socket "$tmp/bad.sock" --turn-requests="$bad"
  expect_grep "serve --turn-requests=$bad" "$tmp/err" "--turn-requests: Value $bad not in range 1 to 1000000"
done
# Byte sizes too big for 64 bits are refused too (CLI11 alone clamps them: no limit).
for flag in --max-feed-bytes --memory-cache-bytes --disk-cache-bytes; do
  expect_exit 2 "serve $flag overflow" "$jitd" serve --socket "$tmp/bad.sock" "$flag=99999999999999999999999"
  expect_grep "serve $flag overflow" "$tmp/err" "$flag: Value 99999999999999999999999 not in range 1 to"
done
[ -e "$tmp/bad.sock" ] && fail "serve flags out of range: a daemon started anyway"

# --- the daemon's life: one announcement line, jitd ps, jitd stop, jitd.pid ---
lsock="$tmp/life/jitd.sock"
expect_exit 0 "life: run starts a daemon" "$jitd" run --socket "$lsock" "$softmax"
expect_grep "life: run starts a daemon" "$tmp/err" "^jitd: started a daemon \(pid [0-9]+\) at $lsock; log $tmp/life/jitd.log; stop it with .jitd stop."
[ "$(grep -c "started a daemon" "$tmp/err")" -eq 1 ] || fail "life: not one announcement: $(cat "$tmp/err")"
lpid="$(cat "$tmp/life/jitd.pid" 2>/dev/null)"
grep -q "(pid $lpid)" "$tmp/err" || fail "life: jitd.pid ($lpid) is not the announced pid"
expect_exit 0 "life: run again" "$jitd" run --socket "$lsock" "$softmax"
grep -q "started a daemon" "$tmp/err" && fail "life: a second daemon was announced"
expect_exit 2 "life: JITD_NO_AUTOSTART" env JITD_NO_AUTOSTART=1 "$jitd" run --socket "$tmp/life_off/jitd.sock" "$softmax"
expect_grep "life: JITD_NO_AUTOSTART" "$tmp/err" "no jitd daemon at .*JITD_NO_AUTOSTART is set"
[ -e "$tmp/life_off/jitd.pid" ] && fail "life: JITD_NO_AUTOSTART started a daemon anyway"
# jitd ps: a client that holds an executable (a run in an endless loop).
"$jitd" run --socket "$lsock" "$tmp/forever.mlir" >/dev/null 2>&1 &
rpid=$!
for _ in $(seq 100); do
  "$jitd" ps --socket "$lsock" >"$tmp/ps" 2>&1
  grep -Eq "^$rpid +[0-9]+ +1 +1 " "$tmp/ps" && break
  sleep 0.05
done
expect_exit 0 "life: ps" "$jitd" ps --socket "$lsock"
expect_grep "life: ps" "$tmp/out" "^jitd daemon [0-9.]+ \(pid $lpid\) at $lsock: 1 client process$"
expect_grep "life: ps" "$tmp/out" "^PID +UID +SESSIONS +EXECUTABLES +BUFFERS +BUFFER-MEM +REQUESTS +EXECUTES +ERRORS +NAME +COMMAND$"
expect_grep "life: ps" "$tmp/out" "^$rpid +[0-9]+ +1 +1 .* jitd run +/.*/jitd run --socket $lsock"
expect_grep "life: ps lists the client's programs" "$tmp/out" "^ +programs: @main \(cpu\)$"
kill "$rpid"; wait "$rpid" 2>/dev/null
# jitd stop: SIGTERM, waits, and the pid file goes.
expect_exit 0 "life: stop" "$jitd" stop --socket "$lsock"
expect_grep "life: stop" "$tmp/err" "^jitd: stopped the daemon \(pid $lpid\) at $lsock$"
# (kill -0 would count a zombie nobody reaped: the daemon's parent is init.)
[ -e "/proc/$lpid" ] && ! grep -q ') Z ' "/proc/$lpid/stat" 2>/dev/null &&
  fail "life: the daemon still runs after jitd stop"
[ -e "$tmp/life/jitd.pid" ] && fail "life: jitd.pid stays after jitd stop"
expect_exit 0 "life: stop with none running" "$jitd" stop --socket "$lsock"
expect_grep "life: stop with none running" "$tmp/err" "no daemon running at $lsock"
expect_exit 2 "life: ps with none running" "$jitd" ps --socket "$lsock"
expect_grep "life: ps with none running" "$tmp/err" "no jitd daemon at .*never starts one"
# A stale pid file (a pid that is no daemon) is not signalled, and removed.
mkdir -p "$tmp/stale" && echo $$ >"$tmp/stale/jitd.pid"
expect_exit 0 "life: stale pid file" "$jitd" stop --socket "$tmp/stale/jitd.sock"
[ -e "$tmp/stale/jitd.pid" ] && fail "life: a stale jitd.pid was not removed"
# `jitd serve` run by hand writes jitd.pid too, and removes it on a clean exit.
"$jitd" serve --socket "$tmp/life2/jitd.sock" --no-disk-cache 2>/dev/null &
spid=$!
for _ in $(seq 100); do [ -s "$tmp/life2/jitd.pid" ] && break; sleep 0.05; done
[ "$(cat "$tmp/life2/jitd.pid" 2>/dev/null)" = "$spid" ] || fail "life: serve wrote no jitd.pid with its pid"
kill "$spid"; wait "$spid"
[ $? -eq 0 ] || fail "life: serve did not exit cleanly on SIGTERM"
[ -e "$tmp/life2/jitd.pid" ] && fail "life: serve left jitd.pid after a clean exit"
kill -9 "$lpid" "$spid" 2>/dev/null  # whatever failed above, no daemon outlives the test

# --- VHLO portable artifacts (MLIR bytecode), picked by magic number ---
bc="$shared/models/searchless_chess_9m.mlir.bc"
if [ -f "$bc" ]; then
  expect_exit 0 "check .mlir.bc" "$jitd" check "$bc"
  expect_exit 0 "fmt .mlir.bc" "$jitd" fmt "$bc"
  expect_grep "fmt .mlir.bc" "$tmp/out" "^module @jit_predict_sequence"
  cp "$bc" "$tmp/artifact.bin"  # no .mlir.bc name: the magic number decides
  expect_exit 0 "check bytecode by magic" "$jitd" check "$tmp/artifact.bin"
  head -c 200 "$bc" >"$tmp/truncated.bc"
  expect_exit 1 "check truncated bytecode" "$jitd" check "$tmp/truncated.bc"
  expect_grep "check truncated bytecode" "$tmp/err" "bytecode offset [0-9]+: "
  # The artifact and its text twin give bit-identical results on cpu, in
  # process and through the daemon (which gets the binary program bytes).
  expect_exit 0 "run .mlir.bc in process" "$jitd" run --in-process --device=cpu --random-inputs \
    --seed=7 -o "$tmp/bc_inproc" "$bc"
  expect_exit 0 "run text twin in process" "$jitd" run --in-process --device=cpu --random-inputs \
    --seed=7 -o "$tmp/bc_text" "${bc%.bc}"
  cmp -s "$tmp/bc_inproc/result_0.npy" "$tmp/bc_text/result_0.npy" ||
    fail "run .mlir.bc: results differ from the text twin's"
  mkdir -p "$tmp/bcd"
  expect_exit 0 "run .mlir.bc via daemon" "$jitd" run --socket "$tmp/bcd/jitd.sock" --device=cpu \
    --random-inputs --seed=7 -o "$tmp/bc_daemon" "$bc"
  cmp -s "$tmp/bc_daemon/result_0.npy" "$tmp/bc_text/result_0.npy" ||
    fail "run .mlir.bc via daemon: results differ from the text twin's"
  if [ -f "$tmp/bcd/jitd.pid" ]; then
    bcpid="$(cat "$tmp/bcd/jitd.pid")"
    kill "$bcpid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$bcpid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$bcpid" 2>/dev/null
  fi
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all jitd CLI checks passed"
