#!/bin/bash
# `cmake --install` into a temporary prefix: every file lands, the units name
# the installed jitd, and the installed jitd.pc + headers + libjitd.so build
# and run a small C program, and examples/add_one.c runs through a daemon
# that the installed library starts from the installed bin/jitd; the
# installed Python package loads the installed libjitd.so.
# Usage: install_test.sh BUILD_DIR C_COMPILER PYTHON EXAMPLES_DIR
set -euo pipefail
build=$1 cc=$2 python=$3 examples=$4
tmp=$(mktemp -d /tmp/jitd-install-test.XXXXXX)
sock=$tmp/run/jitd.sock
cleanup() {
  [ -S "$sock" ] && "$tmp/prefix/bin/jitd" stop --socket "$sock" > /dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
prefix=$tmp/prefix
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install failed"; }

for f in bin/jitd lib/libjitd.so lib/libjitd.so.1 include/jitd/jitd.h include/jitd/jitd_builder.h \
         lib/pkgconfig/jitd.pc lib/systemd/user/jitd.service lib/systemd/user/jitd.socket \
         lib/python3/dist-packages/jitd/__init__.py lib/python3/dist-packages/jitd/libjitd.so.1 \
         share/doc/jitd/README.md share/doc/jitd/USING.md; do
  [ -e "$prefix/$f" ] || fail "missing $prefix/$f"
done
[ -x "$prefix/bin/jitd" ] || fail "bin/jitd is not executable"
"$prefix/bin/jitd" --version > /dev/null || fail "the installed jitd does not run"
grep -qx "ExecStart=$prefix/bin/jitd serve --socket %t/jitd/jitd.sock" "$prefix/lib/systemd/user/jitd.service" \
  || fail "jitd.service does not start the installed jitd: $(grep ExecStart "$prefix/lib/systemd/user/jitd.service")"
grep -qx 'ListenStream=%t/jitd/jitd.sock' "$prefix/lib/systemd/user/jitd.socket" || fail "jitd.socket listens elsewhere"
if grep -q '@[A-Z_]*@' "$prefix/lib/systemd/user/"jitd.*; then fail "an unconfigured @VAR@ in the units"; fi

# A staged install (packaging): DESTDIR holds the files, the units name the
# final prefix.
DESTDIR=$tmp/stage cmake --install "$build" --prefix /usr/local > "$tmp/stage.log" \
  || { cat "$tmp/stage.log"; fail "DESTDIR=... cmake --install failed"; }
grep -qx "ExecStart=/usr/local/bin/jitd serve --socket %t/jitd/jitd.sock" \
  "$tmp/stage/usr/local/lib/systemd/user/jitd.service" || fail "DESTDIR: jitd.service missing or wrong"
[ "$(readlink "$tmp/stage/usr/local/lib/python3/dist-packages/jitd/libjitd.so.1")" = ../../../libjitd.so.1 ] \
  || fail "DESTDIR: the Python package's libjitd.so.1 link is missing or wrong"
[ -e "$tmp/stage/usr/local/bin/jitd" ] || fail "DESTDIR: bin/jitd missing"

# The pkg-config file and headers build a C program against the installed library.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(pkg-config --modversion jitd)" != "" ] || fail "pkg-config does not know jitd"
cat > "$tmp/hello.c" <<'C'
#include <stdio.h>
#include <jitd/jitd.h>
#include <jitd/jitd_builder.h>
int main(void) {
  printf("%d\n", jitd_api_version());
  return jitd_api_version() == JITD_API_VERSION ? 0 : 1;
}
C
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Werror -o "$tmp/hello" "$tmp/hello.c" $(pkg-config --cflags --libs jitd) \
  || fail "a C program does not build with pkg-config's flags"
LD_LIBRARY_PATH=$prefix/lib "$tmp/hello" > /dev/null || fail "the C program does not run"
# ldd's output is captured first: under pipefail, `ldd | grep -q` fails
# whenever grep's early exit makes ldd die of SIGPIPE.
libs=$(LD_LIBRARY_PATH=$prefix/lib ldd "$tmp/hello" 2>&1) || fail "ldd failed on the C program: $libs"
grep -qF "$prefix/lib/libjitd.so.1" <<< "$libs" || fail "the C program did not load the installed libjitd.so: $libs"

# examples/add_one.c, built the way its comment says, starts the installed
# daemon (../bin/jitd beside the installed libjitd.so) and runs through it.
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Werror -o "$tmp/add_one" "$examples/add_one.c" $(pkg-config --cflags --libs jitd) \
  || fail "examples/add_one.c does not build against the install"
out=$(env -u JITD_BINARY -u JITD_NO_AUTOSTART JITD_SOCKET="$sock" XDG_CACHE_HOME="$tmp/cache" \
      LD_LIBRARY_PATH="$prefix/lib" "$tmp/add_one" 2> "$tmp/add_one.err") \
  || { cat "$tmp/add_one.err"; fail "examples/add_one failed"; }
[ "$out" = "2 3 4 5 (compile miss)" ] || fail "examples/add_one printed '$out'"
grep -q "started a daemon" "$tmp/add_one.err" || fail "add_one did not start a daemon: $(cat "$tmp/add_one.err")"
pid=$(cat "$tmp/run/jitd.pid" 2>/dev/null || true)
[ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe")" = "$prefix/bin/jitd" ] \
  || fail "the daemon started is not the installed jitd (pid '$pid': $(readlink "/proc/$pid/exe" 2>&1))"
"$prefix/bin/jitd" stop --socket "$sock" > /dev/null || fail "jitd stop failed"

# The Python package finds the installed library through its link.
got=$(cd "$tmp" && env -u JITD_LIBRARY PYTHONPATH="$prefix/lib/python3/dist-packages" PYTHONDONTWRITEBYTECODE=1 \
      "$python" -c 'import jitd._lib as l; l.lib(); print(l.library_path())') || fail "import jitd failed"
case "$got" in
  "$prefix"/lib/python3/dist-packages/jitd/libjitd.so.1) ;;
  *) fail "the installed Python package loaded $got" ;;
esac
# ... and the installed extension jitd._fast beside it, when the build made one.
if [ -e "$build/lib/python/jitd/_fast.so" ]; then
  got=$(cd "$tmp" && env -u JITD_LIBRARY -u JITD_PYTHON_FAST PYTHONPATH="$prefix/lib/python3/dist-packages" \
        PYTHONDONTWRITEBYTECODE=1 "$python" -c 'import jitd; print(jitd.fast_path_status())') \
    || fail "import jitd failed"
  [ "$got" = "jitd._fast ($prefix/lib/python3/dist-packages/jitd/_fast.so)" ] \
    || fail "the installed Python package's fast path: $got"
fi
# ... and, through it, the installed daemon (started on demand again).
got=$(cd "$tmp" && env -u JITD_LIBRARY -u JITD_BINARY -u JITD_NO_AUTOSTART JITD_SOCKET="$sock" \
      XDG_CACHE_HOME="$tmp/cache" PYTHONPATH="$prefix/lib/python3/dist-packages" PYTHONDONTWRITEBYTECODE=1 \
      "$python" -c '
import numpy as np, jitd
c = jitd.get_client("cpu")
exe = jitd.compile_stablehlo("""func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %y = stablehlo.add %x, %one : tensor<4xf32>
  return %y : tensor<4xf32>
}""", client=c)
print(exe.Execute([np.arange(1, 5, dtype=np.float32)]).tolist())' 2> "$tmp/py.err") \
  || { cat "$tmp/py.err"; fail "the installed Python package could not run a program"; }
[ "$got" = "[2.0, 3.0, 4.0, 5.0]" ] || fail "the installed Python package printed '$got'"
echo "install_test: ok ($prefix)"
