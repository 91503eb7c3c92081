#!/usr/bin/env bash
# scripts/test-gpu.sh on a bundle-shaped tree whose "gpu tests" are small
# scripts printing what a GoogleTest binary prints: it must skip everything,
# naming why, where no GPU is found; with --run-anyway run each listed test
# from bin/, count passed / skipped / failed and fail on a failure; -R and
# --list; refuse a folder that is not a bundle.
#
#   bash tests/bundle/test_gpu_script_test.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script="$here/../../scripts/test-gpu.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jitd-test-gpu-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

root="$tmp/jitd-0.0.0-linux-x86_64"
mkdir -p "$root/bin" "$root/scripts" "$root/share/jitd"
cp "$script" "$root/scripts/test-gpu.sh"
printf '#!/bin/sh\nexit 0\n' >"$root/bin/jitd"
# A fake GoogleTest binary: the filter argument picks what it prints.
cat >"$root/bin/fake_gpu_test" <<'EOF'
#!/bin/sh
case "$1" in
  --gtest_filter=Gpu.Passes) echo "[       OK ] Gpu.Passes"; echo "[  PASSED  ] 1 test." ;;
  --gtest_filter=Gpu.Skips) echo "no CUDA driver: libcuda.so.1 not found"; echo "[  SKIPPED ] Gpu.Skips";
                            echo "[  PASSED  ] 0 tests."; echo "[  SKIPPED ] 1 test, listed below:" ;;
  --gtest_filter=Gpu.Fails) echo "expected 1, got 2"; echo "[  FAILED  ] Gpu.Fails"; exit 1 ;;
  *) echo "unknown filter $1"; exit 2 ;;
esac
EOF
chmod +x "$root/bin/jitd" "$root/bin/fake_gpu_test"
printf 'Gpu.Passes\tfake_gpu_test\t--gtest_filter=Gpu.Passes\n' >"$root/share/jitd/gpu-tests.tsv"
printf 'Gpu.Skips\tfake_gpu_test\t--gtest_filter=Gpu.Skips\n' >>"$root/share/jitd/gpu-tests.tsv"

failures=0
fail() { echo "test_gpu_script_test: FAILED: $1" >&2; failures=$((failures + 1)); }
# run NAME WANT_STATUS ARGS...: runs the bundle's copy, output in $tmp/NAME.
run() {
  local name=$1 want=$2 status=0
  shift 2
  (cd "$tmp" && env -i PATH=/usr/bin:/bin TMPDIR="$tmp" bash "$root/scripts/test-gpu.sh" "$@") \
    >"$tmp/$name" 2>&1 || status=$?
  if [ "$status" -ne "$want" ]; then
    fail "$name: exit status $status, want $want: $(cat "$tmp/$name")"
  fi
}
says() {
  grep -qF -- "$2" "$tmp/$1" || fail "$1: the output does not say '$2': $(cat "$tmp/$1")"
}

have_gpu=0
if [ -e /dev/nvidiactl ] || [ -e /dev/dxg ]; then have_gpu=1; fi

run list 0 --list
says list "Gpu.Passes"
says list "Gpu.Skips"

if [ "$have_gpu" = 0 ]; then
  run no_gpu 0
  says no_gpu "test-gpu: no GPU found:"
  says no_gpu "no /dev/nvidiactl (no NVIDIA kernel driver loaded"
  says no_gpu "SKIPPED all 2 gpu tests"
  if grep -q "Gpu.Passes.*passed" "$tmp/no_gpu"; then fail "no_gpu: ran a test without a GPU"; fi
fi

run anyway 0 --run-anyway
says anyway "Gpu.Passes"
says anyway "SKIPPED"
says anyway "no CUDA driver: libcuda.so.1 not found"
says anyway "test-gpu: 1 passed, 1 skipped, 0 failed of 2"

run only 0 --run-anyway -R 'Pass'
says only "test-gpu: 1 passed, 0 skipped, 0 failed of 1"

printf 'Gpu.Fails\tfake_gpu_test\t--gtest_filter=Gpu.Fails\n' >>"$root/share/jitd/gpu-tests.tsv"
printf 'Gpu.Missing\tno_such_test\t\n' >>"$root/share/jitd/gpu-tests.tsv"
run failing 1 --run-anyway
says failing "expected 1, got 2"
says failing "test-gpu: 1 passed, 1 skipped, 2 failed of 4"
says failing "test-gpu: FAILED Gpu.Fails (exit 1"
says failing "test-gpu: FAILED Gpu.Missing (exit 127"

: >"$root/share/jitd/gpu-tests.tsv"
run empty 0
says empty "lists no gpu-labelled tests"

rm "$root/bin/jitd"
run not_bundle 2
says not_bundle "is not an unpacked jitd bundle"

if [ "$failures" -ne 0 ]; then
  echo "test_gpu_script_test: $failures failure(s)" >&2
  exit 1
fi
echo "test_gpu_script_test: passed"
