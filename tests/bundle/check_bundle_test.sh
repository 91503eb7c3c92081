#!/usr/bin/env bash
# check_bundle.sh against small bundle-shaped trees built here with the C
# compiler: one it must accept, and one per rule it must refuse (naming the
# file and the rule). Cheap (a few tiny compiles), so it runs in every build.
#
#   bash tests/bundle/check_bundle_test.sh CC
set -euo pipefail
cc=${1:?usage: check_bundle_test.sh CC}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jitd-check-bundle-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/third.c" <<'EOF'
#include <math.h>
double third_party(double x) { return sqrt(x) + 1.0; }
EOF
cat >"$tmp/libjitd.c" <<'EOF'
int jitd_version(void) { return 1; }
EOF
cat >"$tmp/main.c" <<'EOF'
double third_party(double x);
int jitd_version(void);
int main(void) { return third_party(4.0) == 3.0 && jitd_version() == 1 ? 0 : 1; }
EOF
origin='-Wl,-rpath,$ORIGIN/../lib'

# make_tree DIR [extra link arguments for bin/jitd...]: a bundle-shaped tree
# whose bin/jitd needs lib/libthird.so.1 (a "shipped" library needing libm)
# and lib/libjitd.so.1, with DT_RPATH $ORIGIN/../lib, stripped.
make_tree() {
  local dir=$1
  shift
  mkdir -p "$dir/bin" "$dir/lib" "$dir/python"
  "$cc" -shared -fPIC -o "$dir/lib/libthird.so.1" -Wl,-soname,libthird.so.1 "$tmp/third.c" -lm
  "$cc" -shared -fPIC -s -o "$dir/lib/libjitd.so.1" -Wl,-soname,libjitd.so.1 \
    -Wl,--disable-new-dtags "$origin" "$tmp/libjitd.c"
  "$cc" -o "$dir/bin/jitd" "$tmp/main.c" "$dir/lib/libthird.so.1" "$dir/lib/libjitd.so.1" \
    -Wl,--disable-new-dtags "$origin" -s "$@"
}

failures=0
fail() { echo "check_bundle_test: FAILED: $1" >&2; failures=$((failures + 1)); }

# The good tree passes, and its program runs from it.
make_tree "$tmp/good"
if ! bash "$here/check_bundle.sh" "$tmp/good" >"$tmp/good.log" 2>&1; then
  fail "a well-formed tree was refused: $(cat "$tmp/good.log")"
fi
if ! env -i "$tmp/good/bin/jitd"; then
  fail "the good tree's bin/jitd does not run from the tree"
fi

# refused NAME EXPECTED-TEXT: check_bundle.sh on $tmp/NAME must exit 1 and
# say EXPECTED-TEXT.
refused() {
  local name=$1 expected=$2 status=0
  bash "$here/check_bundle.sh" "$tmp/$name" >"$tmp/$name.log" 2>&1 || status=$?
  if [ "$status" -ne 1 ]; then
    fail "$name: exit status $status, want 1; output: $(cat "$tmp/$name.log")"
  elif ! grep -qF -- "$expected" "$tmp/$name.log"; then
    fail "$name: the output does not say '$expected': $(cat "$tmp/$name.log")"
  else
    echo "check_bundle_test: $name refused: $(grep -F -- "$expected" "$tmp/$name.log" | head -1)"
  fi
}

# A library neither glibc, libz, libzstd nor in lib/.
make_tree "$tmp/missing"
rm "$tmp/missing/lib/libthird.so.1"
refused missing "bin/jitd needs libthird.so.1, which is neither glibc, libz, libzstd nor in lib/"

# jitd's own binaries must not need libstdc++ (it is linked statically).
make_tree "$tmp/stdcxx" -Wl,--no-as-needed -lstdc++
refused stdcxx "bin/jitd needs libstdc++.so.6; jitd's binaries link libstdc++ and libgcc statically"

# A DT_RUNPATH instead of DT_RPATH.
make_tree "$tmp/runpath" -Wl,--enable-new-dtags
refused runpath "bin/jitd has a DT_RUNPATH"

# An rpath into the build machine.
make_tree "$tmp/abs" -Wl,-rpath,/usr/lib/llvm-19/lib
refused abs "bin/jitd has an rpath into the build machine"

# Not stripped.
make_tree "$tmp/symbols"
"$cc" -o "$tmp/symbols/bin/jitd" "$tmp/main.c" "$tmp/symbols/lib/libthird.so.1" \
  "$tmp/symbols/lib/libjitd.so.1" -Wl,--disable-new-dtags "$origin"
refused symbols "bin/jitd is not stripped"

# A CUDA library linked (never: found at run time).
make_tree "$tmp/cuda"
"$cc" -shared -fPIC -o "$tmp/cuda/lib/libcublas.so.13" -Wl,-soname,libcublas.so.13 "$tmp/third.c" -lm
"$cc" -o "$tmp/cuda/bin/jitd" "$tmp/main.c" "$tmp/cuda/lib/libcublas.so.13" "$tmp/cuda/lib/libjitd.so.1" \
  -Wl,--disable-new-dtags "$origin" -s
refused cuda "bin/jitd needs libcublas.so.13, which must never be linked"

# Not a bundle at all.
status=0
bash "$here/check_bundle.sh" "$tmp/nothing" >/dev/null 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "a folder without bin/ and lib/: exit status $status, want 2"

if [ "$failures" -ne 0 ]; then
  echo "check_bundle_test: $failures failure(s)" >&2
  exit 1
fi
echo "check_bundle_test: passed"
