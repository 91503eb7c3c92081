#!/usr/bin/env bash
# Runs jitd's gpu-labelled tests from an unpacked portable bundle alone: no
# cmake, no ctest, no Debian packages, no source tree. Shipped in the bundle
# as scripts/test-gpu.sh (scripts/bundle.sh); run it on the GPU machine:
#
#   tar -xf jitd-*-linux-x86_64.tar.xz && bash jitd-*-linux-x86_64/scripts/test-gpu.sh
#
# Options:
#   --list        list the gpu tests and exit
#   --run-anyway  run them even where no GPU is found (each should then skip
#                 itself, which checks the no-driver path)
#   -R REGEX      only the tests whose name matches REGEX (grep -E)
# The tests are share/jitd/gpu-tests.tsv (NAME, binary in bin/, arguments),
# written by scripts/bundle.sh from `ctest -L gpu`. Exit status: 0 when every
# test run passed (or none could run: no GPU), 1 when any failed.
# A GPU is "found" when libcuda.so.1 is found ($JITD_CUDA_DRIVER, the
# loader's cache, the usual driver folders, $LD_LIBRARY_PATH) and
# /dev/nvidiactl (WSL: /dev/dxg) exists; each absence is named.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list="$here/share/jitd/gpu-tests.tsv"
run_anyway=0
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --list) [ -f "$list" ] && cut -f1 "$list"; exit 0 ;;
    --run-anyway) run_anyway=1 ;;
    -R) only="${2:?-R needs a regular expression}"; shift ;;
    -h | --help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-gpu: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if ! [ -x "$here/bin/jitd" ]; then
  echo "test-gpu: $here is not an unpacked jitd bundle (no bin/jitd); run the copy inside the bundle" >&2
  exit 2
fi
if ! [ -f "$list" ]; then
  echo "test-gpu: $list is missing; the bundle was made without a test list" >&2
  exit 2
fi

# Is there a GPU? Each missing piece named.
why_no_gpu=()
have_libcuda() {
  if [ -n "${JITD_CUDA_DRIVER:-}" ]; then  # the file or folder jitd is told to load
    [ -f "$JITD_CUDA_DRIVER" ] || [ -e "$JITD_CUDA_DRIVER/libcuda.so.1" ]
    return
  fi
  # (not ldconfig | grep -q: pipefail would count grep's early exit.)
  grep -q 'libcuda\.so\.1 ' <<<"$(ldconfig -p 2>/dev/null)" && return 0
  local d
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/nvidia/lib64 /usr/lib/wsl/lib \
           ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }}; do
    [ -e "$d/libcuda.so.1" ] && return 0
  done
  return 1
}
if ! have_libcuda; then
  why_no_gpu+=("no libcuda.so.1 (the NVIDIA driver's library) at \$JITD_CUDA_DRIVER, in the loader's cache, /usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/lib, /usr/local/nvidia/lib64, /usr/lib/wsl/lib or \$LD_LIBRARY_PATH")
fi
if ! [ -e /dev/nvidiactl ] && ! [ -e /dev/dxg ]; then
  why_no_gpu+=("no /dev/nvidiactl (no NVIDIA kernel driver loaded; WSL: no /dev/dxg)")
fi

total=$(grep -c . "$list" || true)
if [ "$total" -eq 0 ]; then
  echo "test-gpu: this bundle lists no gpu-labelled tests (its build had none); nothing to run"
  exit 0
fi
if [ ${#why_no_gpu[@]} -ne 0 ]; then
  echo "test-gpu: no GPU found:"
  printf '  - %s\n' "${why_no_gpu[@]}"
  if [ "$run_anyway" != 1 ]; then
    echo "test-gpu: SKIPPED all $total gpu tests (--run-anyway runs them anyway; each should skip itself)"
    exit 0
  fi
fi

if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
    sed 's/^/test-gpu: GPU: /'
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/jitd-test-gpu.XXXXXX")
passed=0 failed=0 skipped=0 n=0
failures=()
while IFS=$'\t' read -r -a fields; do
  [ ${#fields[@]} -ge 2 ] || continue
  name=${fields[0]}
  if [ -n "$only" ] && ! grep -Eq -- "$only" <<<"$name"; then continue; fi
  binary="$here/bin/${fields[1]}"
  args=("${fields[@]:2}")
  n=$((n + 1))
  log="$logs/$n.log"
  start=$(date +%s.%N)
  if ! [ -x "$binary" ]; then
    echo "missing binary bin/${fields[1]}" >"$log"
    status=127
  else
    # Sockets, caches and scratch files of the test go to a folder of its own.
    (cd "$logs" && TMPDIR="$logs" "$binary" "${args[@]}") >"$log" 2>&1
    status=$?
  fi
  seconds=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
  if [ "$status" -eq 0 ] && grep -q '\[  SKIPPED \]' "$log" && ! grep -q '\[  PASSED  \] [1-9]' "$log"; then
    skipped=$((skipped + 1))
    reason=$(grep -m1 -B1 '\[  SKIPPED \]' "$log" | head -1)
    printf '%4d  %-60s SKIPPED %ss  %s\n' "$n" "$name" "$seconds" "$reason"
  elif [ "$status" -eq 0 ]; then
    passed=$((passed + 1))
    printf '%4d  %-60s passed  %ss\n' "$n" "$name" "$seconds"
  else
    failed=$((failed + 1))
    failures+=("$name (exit $status; log $log)")
    printf '%4d  %-60s FAILED  %ss (exit %d)\n' "$n" "$name" "$seconds" "$status"
    tail -20 "$log" | sed 's/^/        /'
  fi
done <"$list"

echo "test-gpu: $passed passed, $skipped skipped, $failed failed of $n (logs in $logs)"
if [ "$failed" -ne 0 ]; then
  printf 'test-gpu: FAILED %s\n' "${failures[@]}"
  exit 1
fi
exit 0
