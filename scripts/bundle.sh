#!/usr/bin/env bash
# Builds the portable bundle: one compressed tarball with jitd (CLI and
# daemon), libjitd.so, the C headers, the Python package, the test and
# benchmark binaries and scripts/test-gpu.sh, that runs on any x86-64 Linux
# with glibc (and, optionally, a GPU driver) and nothing else installed.
#
#   bash scripts/bundle.sh [OUTPUT]      default OUTPUT: build-bundle/jitd-VERSION-linux-x86_64.tar.xz
#
# How (README.md, "The portable bundle"): HEAD's sources exported into
# build-bundle-src/ (others' uncommitted edits in this shared checkout never
# reach a bundle), a second build in build-bundle/ configured with
# -DJITD_PORTABLE=ON (cmake/JitdPortable.cmake:
# static LLVM with only the components jitd uses, static libstdc++/libgcc,
# --as-needed, DT_RPATH $ORIGIN/../lib); the binaries stripped; OpenBLAS,
# oneDNN and every other shared library they need beyond glibc, libz and
# libzstd copied into lib/; then tests/bundle/check_bundle.sh checks the tree
# before it is packed. libcuda, cuBLAS(Lt), cuDNN and nvJitLink are never
# linked, so never shipped: jitd finds them at run time.
#
# The build is a full second build of the project (15-25 min on 2 cores); it
# runs with `nice -n 10` and no build lock, so builds in build/ come first.
# Environment:
#   BUNDLE_BUILD_DIR  build folder (default build-bundle)
#   BUNDLE_JOBS       parallel build jobs (default 2)
#   BUNDLE_TARGETS    only these targets (space separated; default: all).
#                     The bundle takes whatever executables the build folder has.
#   BUNDLE_COMPRESS   xz (default; plain `tar -xf` unpacks it) or zstd
#   BUNDLE_BINARIES   all (default: every test and benchmark binary) or gpu
#                     (jitd and the gpu tests' binaries only: a small bundle to
#                     carry to a GPU machine)
#   BUNDLE_SOURCE     head (default: the committed HEAD, via build-bundle-src/)
#                     or tree (this working tree as it is)
#   SHARED_DIR        the shared/ folder the tests read (default ../shared)
#   SKIP_BUILD=1      package what build-bundle/ already has
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)

export CC="${CC:-clang-19}"
export CXX="${CXX:-clang++-19}"
build_dir="${BUNDLE_BUILD_DIR:-build-bundle}"
jobs="${BUNDLE_JOBS:-2}"
compress="${BUNDLE_COMPRESS:-xz}"
binaries="${BUNDLE_BINARIES:-all}"
case "$binaries" in
  all | gpu) ;;
  *) echo "bundle: BUNDLE_BINARIES must be all or gpu, not '$binaries'" >&2; exit 2 ;;
esac
case "$compress" in
  xz | zstd) ;;
  *) echo "bundle: BUNDLE_COMPRESS must be xz or zstd, not '$compress'" >&2; exit 2 ;;
esac
if [ "$(uname -m)" != x86_64 ]; then
  echo "bundle: the portable bundle is built on x86-64 only, not $(uname -m)" >&2
  exit 2
fi

# The sources: HEAD's tree, exported into $src_dir (files whose content
# changed get a new time; the others keep theirs, so rebuilds are
# incremental), so that the uncommitted edits of others in this shared
# checkout never reach a bundle. BUNDLE_SOURCE=tree builds the working tree.
case "${BUNDLE_SOURCE:-head}" in
  head) src_dir="${BUNDLE_SOURCE_DIR:-build-bundle-src}" ;;
  tree) src_dir=. ;;
  *) echo "bundle: BUNDLE_SOURCE must be head or tree, not '${BUNDLE_SOURCE}'" >&2; exit 2 ;;
esac
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  if [ "$src_dir" != . ]; then
    export_dir=$(mktemp -d "${TMPDIR:-/tmp}/jitd-bundle-src.XXXXXX")
    git archive --format=tar HEAD | tar -xf - -C "$export_dir"
    python3 - "$export_dir" "$src_dir" <<'EOF'
import filecmp, os, shutil, sys
new, old = sys.argv[1], sys.argv[2]
os.makedirs(old, exist_ok=True)
changed = 0
for d, dirs, files in os.walk(new):
    rel = os.path.relpath(d, new)
    os.makedirs(os.path.join(old, rel), exist_ok=True)
    for f in files:
        a, b = os.path.join(d, f), os.path.join(old, rel, f)
        if os.path.islink(a) or not os.path.isfile(b) or os.path.islink(b) or not filecmp.cmp(a, b, shallow=False):
            if os.path.lexists(b):
                os.remove(b)
            shutil.copy2(a, b, follow_symlinks=False)
            if not os.path.islink(b):
                os.utime(b)  # newer than the objects built from the old content
            changed += 1
for d, dirs, files in os.walk(old, topdown=False):
    rel = os.path.relpath(d, old)
    for f in files:
        if not os.path.lexists(os.path.join(new, rel, f)):
            os.remove(os.path.join(d, f))
            changed += 1
    if not os.path.isdir(os.path.join(new, rel)):
        os.rmdir(d)
print(f"bundle: sources of HEAD ({changed} files changed) in {old}")
EOF
    rm -rf "$export_dir"
    echo "bundle: HEAD is $(git rev-parse --short HEAD)"
  fi
  cmake -S "$src_dir" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DJITD_PORTABLE=ON \
    -DJITD_BUILD_FUZZERS=OFF -DJITD_SHARED_DIR="${SHARED_DIR:-$(cd .. && pwd)/shared}" >/dev/null
  targets=()
  for t in ${BUNDLE_TARGETS:-}; do targets+=(--target "$t"); done
  # -k 0: one target that fails does not hide what else fails.
  if ! nice -n 10 cmake --build "$build_dir" -j"$jobs" "${targets[@]}" -- -k 0; then
    echo "bundle: the build in $build_dir failed (sources: $src_dir); no bundle made" >&2
    exit 1
  fi
fi
if ! grep -q '^JITD_PORTABLE:BOOL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null; then
  echo "bundle: $build_dir is not configured with -DJITD_PORTABLE=ON" >&2
  exit 1
fi
for f in "$build_dir/bin/jitd" "$build_dir/lib/libjitd.so.1"; do
  [ -f "$f" ] || { echo "bundle: $f is missing; build the targets jitd and jitd_c_api" >&2; exit 1; }
done

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build_dir/CMakeCache.txt")
name="jitd-${version}-linux-x86_64"
case "$compress" in
  xz) out="${1:-$build_dir/$name.tar.xz}" ;;
  zstd) out="${1:-$build_dir/$name.tar.zst}" ;;
esac
case "$out" in /*) ;; *) out="$repo/$out" ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/jitd-bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/$name"
mkdir -p "$root"/{bin,lib,include/jitd,python,examples,scripts,share/jitd}

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

# The gpu-labelled ctest tests, for scripts/test-gpu.sh: one line per test,
# NAME<TAB>BINARY<TAB>ARGUMENTS (tab separated; BINARY relative to bin/).
python3 - "$build_dir" "$root/share/jitd/gpu-tests.tsv" <<'EOF'
import json, os, subprocess, sys
build_dir, out = sys.argv[1], sys.argv[2]
shown = subprocess.run(["ctest", "--test-dir", build_dir, "-L", "gpu", "--show-only=json-v1"],
                       check=True, capture_output=True, text=True).stdout
bin_dir = os.path.realpath(os.path.join(build_dir, "bin"))
lines = []
for test in json.loads(shown).get("tests", []):
    command = test.get("command") or []
    if not command:
        continue
    binary = os.path.realpath(command[0])
    if os.path.dirname(binary) != bin_dir:
        print(f"bundle: gpu test {test['name']} runs {command[0]}, not a binary of {bin_dir}; left out",
              file=sys.stderr)
        continue
    if any("\t" in a or "\n" in a for a in command):
        print(f"bundle: gpu test {test['name']} has a tab or newline in its command; left out", file=sys.stderr)
        continue
    lines.append("\t".join([test["name"], os.path.basename(binary)] + command[1:]))
with open(out, "w") as f:
    f.write("".join(line + "\n" for line in lines))
print(f"bundle: {len(lines)} gpu-labelled tests listed for scripts/test-gpu.sh")
EOF

# Executables: jitd, the tests and the benchmarks (fuzzers are not built);
# BUNDLE_BINARIES=gpu: jitd and the gpu tests' binaries only.
for f in "$build_dir"/bin/*; do
  [ -f "$f" ] && [ -x "$f" ] && is_elf "$f" || continue
  if [ "$binaries" = gpu ] && [ "$(basename "$f")" != jitd ] &&
     ! grep -qxF "$(basename "$f")" <<<"$(cut -f2 "$root/share/jitd/gpu-tests.tsv")"; then
    continue
  fi
  cp "$f" "$root/bin/"
done
cp "$build_dir/lib/libjitd.so.1" "$root/lib/"
ln -s libjitd.so.1 "$root/lib/libjitd.so"
cp "$src_dir"/include/jitd/*.h "$root/include/jitd/"

# The Python package, with libjitd.so.1 beside it (where jitd/_lib.py looks
# second, after $JITD_LIBRARY), its tests, and any CPython extension module
# the build made for it.
cp -r "$src_dir"/libclient/python/jitd "$root/python/jitd"
cp -r "$src_dir"/libclient/python/tests "$root/python/tests"
find "$root/python" -name __pycache__ -prune -exec rm -rf {} +
ln -s ../../lib/libjitd.so.1 "$root/python/jitd/libjitd.so.1"
# (jitd._fast: $build_dir/lib/python/jitd/_fast.so).
while IFS= read -r -d '' ext; do
  cp "$ext" "$root/python/jitd/"
done < <(find "$build_dir/lib/python/jitd" -maxdepth 1 -name '*.so' -type f -print0 2>/dev/null)

cp "$src_dir"/examples/*.mlir "$src_dir"/examples/*.c "$src_dir"/examples/*.py "$root/examples/" 2>/dev/null || true
cp "$src_dir"/scripts/test-gpu.sh "$root/scripts/"
cp "$src_dir"/tests/bundle/check_bundle.sh "$root/scripts/"
cp "$src_dir"/LICENSE "$root/" 2>/dev/null || true

# libdevice (the CUDA math library as bitcode, which the cuda device links
# into its kernels) from the CUDA toolkit, where this machine has one: jitd
# looks for it in ../share/jitd/ beside its binary.
libdevice=""
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/lib/cuda; do
  if [ -n "$d" ] && [ -f "$d/nvvm/libdevice/libdevice.10.bc" ]; then
    libdevice="$d/nvvm/libdevice/libdevice.10.bc"
    break
  fi
done
if [ -z "$libdevice" ] && [ -f /usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc ]; then
  libdevice=/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc
fi
if [ -n "$libdevice" ]; then
  cp "$libdevice" "$root/share/jitd/libdevice.10.bc"
  echo "bundle: shipping $libdevice as share/jitd/libdevice.10.bc"
else
  echo "bundle: no CUDA toolkit libdevice.10.bc here; the bundle's cuda device will need one on the GPU machine (\$JITD_LIBDEVICE or a toolkit)" >&2
fi


# Strip our binaries (Debian's shared libraries come stripped).
for f in "$root"/bin/* "$root"/lib/libjitd.so.1 "$root"/python/jitd/*.so; do
  [ -f "$f" ] && ! [ -L "$f" ] && is_elf "$f" || continue
  strip --strip-unneeded "$f"
done

# Shared libraries outside glibc, libz and libzstd, found by the loader of
# this machine (ldd is transitive), copied into lib/ under their sonames.
allowed_re='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libmvec\.so\.1|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libz\.so\.1|libzstd\.so\.1)$'
while IFS= read -r -d '' f; do
  is_elf "$f" || continue
  while read -r soname arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [[ "$soname" =~ $allowed_re ]] && continue
    [ -e "$root/lib/$soname" ] && continue
    if [ "$path" = "not" ]; then
      echo "bundle: $f needs $soname, which this machine does not have" >&2
      exit 1
    fi
    cp -L "$path" "$root/lib/$soname"
    chmod 0755 "$root/lib/$soname"
  done < <(env -u LD_LIBRARY_PATH ldd "$f" 2>/dev/null || true)
done < <(find "$root/bin" "$root/lib" "$root/python" -type f -print0)

# The newest glibc symbol version any file needs: the oldest glibc it runs on.
glibc_needed=$(find "$root" -type f -print0 | xargs -0 objdump -T 2>/dev/null |
  grep -o 'GLIBC_[0-9][0-9.]*' | sort -u -V | tail -1 | sed 's/GLIBC_//')  || true
cat >"$root/README.txt" <<EOF
jitd $version, portable bundle for x86-64 Linux with glibc $glibc_needed or newer.

  bin/jitd --help                  the CLI and daemon (jitd serve)
  bin/jitd run --in-process --device=cpu examples/softmax.mlir
  lib/libjitd.so, include/jitd/    the C API (link with -Lbundle/lib -ljitd)
  PYTHONPATH=\$PWD/python python3 -c 'import jitd'   (needs numpy); set
                                   JITD_BINARY=\$PWD/bin/jitd so it can start a daemon
  bin/jitd_*_test, bin/*_bench     the test and benchmark binaries
  bash scripts/test-gpu.sh         the gpu-labelled tests, from this folder alone
  bash scripts/check_bundle.sh .   checks the shared libraries every binary needs

share/jitd/libdevice.10.bc (when shipped) is the CUDA toolkit's libdevice,
which the cuda device links into its kernels.
Everything beyond glibc, libz and libzstd is in lib/ (found through
DT_RPATH \$ORIGIN/../lib). libcuda, cuBLAS(Lt), cuDNN and nvJitLink are not
shipped: jitd finds them at run time where the machine has them.
EOF

echo "== checking the staged bundle"
bash "$src_dir"/tests/bundle/check_bundle.sh "$root"

mkdir -p "$(dirname "$out")"
tar_args=(--sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work" -cf - "$name")
case "$compress" in
  xz) tar "${tar_args[@]}" | xz -T"$jobs" -9 >"$out.tmp" ;;
  zstd) tar "${tar_args[@]}" | zstd -q -T"$jobs" -19 --long=27 >"$out.tmp" ;;
esac
mv "$out.tmp" "$out"

unpacked=$(du -sb "$root" | cut -f1)
packed=$(stat -c %s "$out")
echo "bundle: $out (needs glibc >= $glibc_needed)"
awk -v n="$(find "$root" -type f | wc -l)" -v u="$unpacked" -v p="$packed" -v c="$compress" \
  'BEGIN { printf "bundle: %d files, unpacked %.1f MB, compressed (%s) %.1f MB\n", n, u / 1e6, c, p / 1e6 }'
