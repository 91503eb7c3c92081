#!/usr/bin/env bash
# Sets up the machine, builds the `jitd` tool and runs its main job on the
# bundled example: parse, verify and print examples/softmax.mlir, run it on
# the reference interpreter (the example checks its own result), then run it
# through the jitd daemon: the first `jitd run` starts a daemon on a temporary
# socket and compiles (a cache miss), the second finds it in the daemon's
# cache (a hit), `jitd stats` shows the daemon's counters, and the daemon is
# stopped at the end.
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
echo "== 4. jitd conformance $example on the reference interpreter and the CPU JIT  (its checks must hold)"
"$jitd" conformance --device=interpreter "$example"
"$jitd" conformance --device=cpu "$example"

# A private daemon for this script: its socket, log, pid file and disk cache
# live in one temporary directory, removed (daemon stopped) on exit.
daemon_dir="$(mktemp -d /tmp/jitd-example.XXXXXX)"
socket="$daemon_dir/jitd.sock"
stop_daemon() {
  if [ -f "$daemon_dir/jitd.pid" ]; then
    pid="$(cat "$daemon_dir/jitd.pid")"
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -rf "$daemon_dir"
}
trap stop_daemon EXIT
export XDG_CACHE_HOME="$daemon_dir/cache"

echo
echo "== 5. jitd run $example --socket $socket  (starts a daemon; the CPU JIT compiles: miss)"
"$jitd" run "$example" --socket "$socket"

echo
echo "== 6. jitd run $example --socket $socket  (same daemon; compile: hit)"
"$jitd" run "$example" --socket "$socket"

echo
echo "== 7. jitd stats --socket $socket"
"$jitd" stats --socket "$socket"
