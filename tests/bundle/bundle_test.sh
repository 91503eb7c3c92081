#!/usr/bin/env bash
# The portable bundle's test: unpacks BUNDLE (a .tar.xz or .tar.zst made by
# scripts/bundle.sh) into a fresh temporary folder and, from there alone:
#  1. check_bundle.sh: every ELF file needs only glibc, libz, libzstd and the
#     bundle's lib/ (readelf DT_NEEDED, DT_RPATH, ldd with no environment);
#  2. runs a cpu program in process, and through a daemon the bundle's jitd
#     starts itself on a socket in the temporary folder, then stops it;
#  3. again with the build machine's libraries hidden (a private mount
#     namespace: /usr/lib/llvm-19 emptied, the system's copies of every
#     library the bundle ships replaced by empty files), as on a GPU machine
#     with none of our Debian packages; ldd there must resolve everything
#     to the bundle or to glibc, libz, libzstd;
#  4. the Python package from the bundle (Debian's /usr/bin/python3 with
#     numpy) runs a program through the bundle's libjitd.so.1 and daemon;
#  5. with the conformance corpus at SHARED_DIR, the bundle's jitd
#     conformance on the cpu device over a fixed slice of it;
#  6. scripts/test-gpu.sh from the bundle: without a GPU it skips, naming why.
#
#   bash tests/bundle/bundle_test.sh BUNDLE [SHARED_DIR]
# Registered in ctest (label `bundle`) only in the JITD_PORTABLE build:
#   bash scripts/bundle.sh && ctest --test-dir build-bundle -L bundle
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: bundle_test.sh BUNDLE.tar.xz|BUNDLE.tar.zst [SHARED_DIR]" >&2
  exit 2
fi
bundle=$1
shared=${2:-}
if ! [ -f "$bundle" ]; then
  echo "bundle_test: no bundle at $bundle; make it first with: bash scripts/bundle.sh" >&2
  exit 1
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jitd-bundle-test.XXXXXX")
daemon_socket="$tmp/run/jitd.sock"
cleanup() {
  if [ -n "${root:-}" ] && [ -S "$daemon_socket" ]; then
    "$root/bin/jitd" stop --socket "$daemon_socket" >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/unpacked" "$tmp/run"
chmod 700 "$tmp/run"

echo "== unpacking $(basename "$bundle") into $tmp/unpacked"
case "$bundle" in
  *.tar.zst) zstd -q -d --long=27 -c "$bundle" | tar -xf - -C "$tmp/unpacked" ;;
  *) tar -xf "$bundle" -C "$tmp/unpacked" ;;
esac
roots=("$tmp"/unpacked/*)
if [ ${#roots[@]} -ne 1 ] || ! [ -d "${roots[0]}" ]; then
  echo "bundle_test: the bundle should hold exactly one top folder, it holds: ${roots[*]##*/}" >&2
  exit 1
fi
root=${roots[0]}

echo "== 1. shared libraries"
bash "$here/check_bundle.sh" "$root"

# Checks that "$2" (a file) holds the expected softmax rows and no failure.
expect_softmax() {
  local what=$1 out=$2
  if ! grep -q '0.0320586' "$out" || ! grep -q '0.616824' "$out"; then
    echo "bundle_test: $what: the softmax result is not in its output:" >&2
    cat "$out" >&2
    exit 1
  fi
  if ! grep -q 'checks: 1 passed, 0 failed' "$out"; then
    echo "bundle_test: $what: the program's self-check did not pass:" >&2
    cat "$out" >&2
    exit 1
  fi
  echo "bundle_test: $what: ok"
}
program="$root/examples/softmax.mlir"
[ -f "$program" ] || { echo "bundle_test: $program is missing from the bundle" >&2; exit 1; }
clean_env=(env -i "PATH=/usr/bin:/bin" "HOME=$tmp" "TMPDIR=$tmp" "JITD_BINARY=$root/bin/jitd")

echo "== 2. a cpu program, in process and through a daemon"
"${clean_env[@]}" "$root/bin/jitd" run --in-process --device=cpu "$program" >"$tmp/out1" 2>&1 ||
  { cat "$tmp/out1" >&2; echo "bundle_test: jitd run --in-process failed" >&2; exit 1; }
expect_softmax "jitd run --in-process --device=cpu" "$tmp/out1"
"${clean_env[@]}" "$root/bin/jitd" run --device=cpu --socket "$daemon_socket" "$program" >"$tmp/out2" 2>&1 ||
  { cat "$tmp/out2" >&2; echo "bundle_test: jitd run through a daemon failed" >&2; exit 1; }
expect_softmax "jitd run --device=cpu through the daemon it started" "$tmp/out2"
"${clean_env[@]}" "$root/bin/jitd" stop --socket "$daemon_socket" >/dev/null

echo "== 3. with the build machine's libraries hidden"
if unshare --mount --map-root-user true 2>/dev/null || unshare --mount true 2>/dev/null; then
  userns=(--map-root-user)
  unshare --mount --map-root-user true 2>/dev/null || userns=()
  # The system files to hide: /usr/lib/llvm-19, and the files behind the
  # system's copies of every library the bundle ships in lib/.
  hide=()
  for lib in "$root"/lib/*; do
    soname=$(basename "$lib")
    [ "$soname" = libjitd.so ] || [ "$soname" = libjitd.so.1 ] && continue
    for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-pthread \
             /usr/local/lib /lib64 /usr/lib64; do
      [ -e "$d/$soname" ] && hide+=("$(readlink -f "$d/$soname")")
    done
  done
  mapfile -t hide < <(printf '%s\n' "${hide[@]}" | LC_ALL=C sort -u)
  : >"$tmp/empty"
  cat >"$tmp/hidden.sh" <<'EOF'
set -eu
root=$1 program=$2 socket=$3 empty=$4; shift 4
if [ -d /usr/lib/llvm-19 ]; then mount -t tmpfs none /usr/lib/llvm-19; fi
for f in "$@"; do mount --bind "$empty" "$f"; done
# libLLVM through any other path, as a last guard.
if env -i /usr/bin/ldd "$root/bin/jitd" | grep -E 'not found|libLLVM|llvm-19'; then
  echo "bundle_test: hidden: bin/jitd does not resolve from the bundle alone" >&2; exit 1
fi
env -i /usr/bin/ldd "$root/bin/jitd" | sed 's/^/    ldd: /'
env -i PATH=/usr/bin:/bin HOME=/tmp JITD_BINARY="$root/bin/jitd" \
  "$root/bin/jitd" run --in-process --device=cpu "$program" >"$socket.out1" 2>&1
env -i PATH=/usr/bin:/bin HOME=/tmp JITD_BINARY="$root/bin/jitd" \
  "$root/bin/jitd" run --device=cpu --socket "$socket" "$program" >"$socket.out2" 2>&1
env -i PATH=/usr/bin:/bin "$root/bin/jitd" stop --socket "$socket" >/dev/null
# Library ops (OpenBLAS, oneDNN from lib/), unfolded: --pipeline=none.
for f in "${socket%/*}"/library_*.mlir; do
  [ -f "$f" ] || continue
  env -i PATH=/usr/bin:/bin HOME=/tmp ONEDNN_VERBOSE=1 "$root/bin/jitd" run --in-process --device=cpu --pipeline=none \
    --profile "$f" >"$f.out" 2>&1 || { cat "$f.out" >&2; exit 1; }
done
EOF
  # Two corpus programs whose one op runs in a library when not folded:
  # dot_general (OpenBLAS) and an f32 convolution (oneDNN).
  library_programs=(dot_general_float32_4_3_float64_3_6.mlir conv_general_dilated_float32_1_1_28_28_float32_3_3_1_16.mlir)
  if [ -n "$shared" ]; then
    for p in "${library_programs[@]}"; do
      cp "$shared/conformance/stablehlo/$p" "$tmp/run/library_$p"
    done
  fi
  echo "bundle_test: hiding /usr/lib/llvm-19 and ${#hide[@]} system libraries: ${hide[*]##*/}"
  if ! unshare --mount "${userns[@]}" sh "$tmp/hidden.sh" "$root" "$program" "$tmp/run/hidden.sock" "$tmp/empty" "${hide[@]}"; then
    cat "$tmp/run/hidden.sock.out1" "$tmp/run/hidden.sock.out2" 2>/dev/null >&2 || true
    echo "bundle_test: the bundle does not run with the build machine's libraries hidden" >&2
    exit 1
  fi
  expect_softmax "hidden libraries: jitd run --in-process" "$tmp/run/hidden.sock.out1"
  expect_softmax "hidden libraries: jitd run through a daemon" "$tmp/run/hidden.sock.out2"
  for out in "$tmp"/run/library_*.mlir.out; do
    [ -f "$out" ] || continue
    what="hidden libraries: $(basename "${out%.out}")"
    if ! grep -q ' 1 library ops' "$out" || ! grep -q 'checks: 1 passed, 0 failed' "$out"; then
      cat "$out" >&2
      echo "bundle_test: $what: want 1 library op and its check passed" >&2
      exit 1
    fi
    case "$out" in
      *conv*) if ! grep -q '^onednn_verbose.*,exec,' "$out"; then
                echo "bundle_test: $what: oneDNN (lib/libdnnl.so.2) did not run the convolution" >&2
                exit 1
              fi ;;
    esac
    echo "bundle_test: $what: $(grep -m1 ' library stablehlo' "$out" | sed 's/^ *//'), check passed"
  done
else
  echo "bundle_test: SKIPPED step 3: cannot make a private mount namespace here (unshare --mount refused)"
fi

echo "== 4. the Python package"
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  env -i PATH=/usr/bin:/bin HOME="$tmp" PYTHONPATH="$root/python" PYTHONDONTWRITEBYTECODE=1 \
    JITD_BINARY="$root/bin/jitd" JITD_SOCKET="$tmp/run/py.sock" \
    /usr/bin/python3 - "$root" <<'EOF'
import os, sys
import numpy as np
import jitd
from jitd import _lib
root = os.path.realpath(sys.argv[1])
path = os.path.realpath(_lib.library_path())
assert path.startswith(root + "/"), f"libjitd.so loaded from {path}, outside the bundle"
client = jitd.Client(platform="cpu", socket_path=os.environ["JITD_SOCKET"])
exe = client.compile_stablehlo("""
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = stablehlo.constant dense<1.5> : tensor<3xf32>
  %0 = stablehlo.multiply %x, %c : tensor<3xf32>
  return %0 : tensor<3xf32>
}
""")
out = exe.Execute([np.array([1, 2, -4], np.float32)])
assert np.array_equal(np.asarray(out), np.array([1.5, 3, -6], np.float32)), out
print(f"bundle_test: python: a cpu program through {path} and the bundle's daemon: ok")
# The CPython extension, where the bundle ships one, loads from the bundle.
status = jitd.fast_path_status()
if any(f.endswith(".so") and f != "libjitd.so.1" for f in os.listdir(os.path.join(root, "python", "jitd"))):
    assert status.startswith("jitd._fast (" + root + "/"), f"the bundle's jitd._fast is not used: {status}"
print(f"bundle_test: python: Execute path: {status}")
EOF
  "$root/bin/jitd" stop --socket "$tmp/run/py.sock" >/dev/null 2>&1 || true
else
  echo "bundle_test: SKIPPED step 4: /usr/bin/python3 has no numpy"
fi

echo "== 5. conformance on the cpu device, a slice of the corpus"
if [ -n "$shared" ] && [ -d "$shared/conformance/stablehlo" ]; then
  # Every 40th file in name order: a fixed slice of about 60 programs.
  mapfile -t files < <(find "$shared/conformance/stablehlo" -name '*.mlir' | LC_ALL=C sort | awk 'NR % 40 == 1')
  "${clean_env[@]}" "$root/bin/jitd" conformance --device=cpu --jobs=2 --timeout=120 \
    --expected-failures="$here/../conformance/cpu_expected_failures.txt" "${files[@]}" >"$tmp/conf" 2>&1 ||
    { tail -30 "$tmp/conf" >&2; echo "bundle_test: conformance from the bundle failed" >&2; exit 1; }
  tail -1 "$tmp/conf"
else
  echo "bundle_test: SKIPPED step 5: no conformance corpus (give SHARED_DIR)"
fi

echo "== 6. scripts/test-gpu.sh from the bundle"
(cd "$tmp" && env -i PATH=/usr/bin:/bin HOME="$tmp" TMPDIR="$tmp" bash "$root/scripts/test-gpu.sh") | tee "$tmp/gpu"
if ! grep -q 'SKIPPED all\|nothing to run\|passed,' "$tmp/gpu"; then
  echo "bundle_test: test-gpu.sh said neither that it skipped nor what ran" >&2
  exit 1
fi
echo "bundle_test: all checks passed"
