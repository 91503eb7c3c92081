#!/usr/bin/env bash
# Tests the `jitd` command line: exit codes, messages, fmt and check.
# Usage: jitd_cli_test.sh PATH/TO/jitd PATH/TO/examples   (ctest runs it)
set -uo pipefail

jitd="$1"
examples="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
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
expect_exit 0 "fmt --help" "$jitd" fmt --help
expect_grep "fmt --help" "$tmp/out" "--generic"
expect_exit 0 "check --help" "$jitd" check --help
expect_exit 0 "--version" "$jitd" --version
expect_grep "--version" "$tmp/out" "^jitd [0-9]"
expect_exit 2 "no arguments" "$jitd"
expect_exit 2 "unknown subcommand" "$jitd" frobnicate
expect_exit 2 "fmt without file" "$jitd" fmt
expect_exit 2 "check without file" "$jitd" check

# --- read errors ---
expect_exit 2 "missing file" "$jitd" check "$tmp/nope.mlir"
expect_grep "missing file" "$tmp/err" "nope.mlir.*No such file"
expect_exit 2 "directory" "$jitd" fmt "$tmp"
expect_grep "directory" "$tmp/err" "is a directory"

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

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all jitd CLI checks passed"
