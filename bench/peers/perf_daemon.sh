#!/usr/bin/env bash
# Where a jitd daemon's CPU time goes while it executes one program again and
# again (steady state: no compile, no input loading): `perf record` of the
# daemon process during a `jitd run --repeat` that hits its compile cache,
# then perf's per-symbol report (JIT kernels show as [JIT] addresses; the
# kernel names come from `jitd run --profile`).
#   bash bench/peers/perf_daemon.sh PROGRAM.mlir INPUT_DIR THREADS [REPEATS] [PERF_OUT]
# INPUT_DIR holds arg_<i>.npy (cpu_peers.py writes them under its --data
# folder: inputs/<model>/, micro/<program>/). THREADS 1 pins the daemon to
# CPU 1, as cpu_peers.py's 1-thread rounds. Needs perf (linux-perf).
set -euo pipefail
program="$1" inputs="$2" threads="$3" repeats="${4:-20}" out="${5:-/tmp/jitd-perf-daemon.data}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
jitd="${JITD_BINARY:-$repo/build/bin/jitd}"
dir="$(mktemp -d)"
trap 'kill "$daemon" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
pin=()
if [ "$threads" = 1 ]; then pin=(taskset -c 1); fi
export JITD_CPU_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" JITD_NO_AUTOSTART=1
unset OPENBLAS_CORETYPE
"${pin[@]}" "$jitd" serve --socket "$dir/s" --no-disk-cache --default-device=cpu --log-level=error &
daemon=$!
for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done
args=()
for f in "$inputs"/arg_*.npy; do
  i="$(basename "$f" .npy)"
  args+=(--input "${i#arg_}=$f")
done
run=("$jitd" run --socket "$dir/s" --no-start-daemon "$program" "${args[@]}")
"${run[@]}" > /dev/null                    # compile (a miss), one execute
perf record -q -g -e cpu-clock -F 4000 -p "$daemon" -o "$out" -- \
  "${run[@]}" --repeat "$repeats" --warmup 2 2>&1 | grep -E '^(timing|repeat):' || true
perf report -i "$out" --no-children --sort dso,sym -g none 2>/dev/null | grep -v '^#' | grep '%' | head -25
