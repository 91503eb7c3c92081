#!/usr/bin/env bash
# Checks an unpacked (or staged) portable bundle: every ELF file in it needs
# no shared library outside glibc, libz, libzstd and the bundle's own lib/.
#
#   bash check_bundle.sh BUNDLE_ROOT
#
# For each ELF file under bin/, lib/ and python/:
#  - each DT_NEEDED is glibc's (libc, libm, libpthread, libdl, librt,
#    ld-linux-x86-64), libz.so.1, libzstd.so.1 or a file in lib/;
#  - none is libLLVM, libcuda, cuBLAS(Lt), cuDNN or nvJitLink, and jitd's own
#    binaries (bin/, lib/libjitd.so.1, Python extensions) do not need
#    libstdc++ or libgcc_s (linked statically);
#  - jitd's own binaries are stripped and carry DT_RPATH $ORIGIN/../lib only
#    (no DT_RUNPATH, no absolute folder of the build machine);
#  - `ldd` with an empty environment resolves everything jitd's binaries
#    load, to the bundle or to an allowed system library.
# Prints one line per problem (file: what) and exits 1 if there is any.
set -euo pipefail
if [ $# -ne 1 ] || ! [ -d "$1/bin" ] || ! [ -d "$1/lib" ]; then
  echo "usage: check_bundle.sh BUNDLE_ROOT (a folder with bin/ and lib/)" >&2
  exit 2
fi
root=$(cd "$1" && pwd)
problems=0
problem() { echo "check_bundle: $1" >&2; problems=$((problems + 1)); }

glibc_re='^(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libmvec\.so\.1|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1)$'
system_re='^(libz\.so\.1|libzstd\.so\.1)$'
forbidden_re='^(libLLVM|libcuda\.|libcudart|libcublas|libcublasLt|libcudnn|libnvJitLink|libnvrtc)'
static_re='^(libstdc\+\+\.so|libgcc_s\.so)'

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }
ours() {  # jitd's own binaries, as opposed to the shipped third-party libraries
  case "$1" in
    "$root"/bin/* | "$root"/lib/libjitd.so* | "$root"/python/*) return 0 ;;
    *) return 1 ;;
  esac
}

elves=0
while IFS= read -r -d '' f; do
  is_elf "$f" || continue
  elves=$((elves + 1))
  rel=${f#"$root"/}
  dynamic=$(readelf -d "$f" 2>/dev/null || true)
  while IFS= read -r needed; do
    [ -n "$needed" ] || continue
    if [[ "$needed" =~ $forbidden_re ]]; then
      problem "$rel needs $needed, which must never be linked (found at run time, or linked statically)"
    elif ours "$f" && [[ "$needed" =~ $static_re ]]; then
      problem "$rel needs $needed; jitd's binaries link libstdc++ and libgcc statically"
    elif [[ "$needed" =~ $glibc_re ]] || [[ "$needed" =~ $system_re ]]; then
      :
    elif ! [ -e "$root/lib/$needed" ]; then
      problem "$rel needs $needed, which is neither glibc, libz, libzstd nor in lib/"
    fi
  done < <(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$dynamic")
  if ours "$f"; then
    if grep -q '(RUNPATH)' <<<"$dynamic"; then
      problem "$rel has a DT_RUNPATH (the loader ignores it for the dependencies of lib/'s libraries); want DT_RPATH \$ORIGIN/../lib"
    fi
    rpath=$(sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p' <<<"$dynamic")
    case "$f" in
      "$root"/python/*) ;;
      *) if [ "$rpath" != '$ORIGIN/../lib' ]; then
           problem "$rel has rpath '$rpath', want exactly \$ORIGIN/../lib"
         fi ;;
    esac
    if [[ "$rpath" == *"/usr/"* ]] || [[ "$rpath" == *"/work/"* ]] || [[ "$rpath" == *"/home/"* ]]; then
      problem "$rel has an rpath into the build machine: $rpath"
    fi
    # (grep -q on a pipe would end readelf early with SIGPIPE, which
    # pipefail reports as a failed test: read the whole listing first.)
    sections=$(readelf -S "$f" 2>/dev/null || true)
    if grep -q ' \.symtab ' <<<"$sections"; then
      problem "$rel is not stripped"
    fi
  fi
  # What the loader of this machine finds for jitd's own files, with no
  # environment: ldd lists their whole closure, the shipped libraries'
  # dependencies found through the executable's DT_RPATH as at run time.
  # (Shipped libraries carry no rpath of their own: alone, ldd would look
  # for their dependencies in the system's folders.)
  ours "$f" || continue
  while IFS= read -r line; do
    case "$line" in
      *"not found"*) problem "$rel: ldd: $line" ;;
      *"=> "*)
        soname=$(awk '{print $1}' <<<"$line")
        path=$(awk '{print $3}' <<<"$line")
        if [[ "$path" == "$root"/* ]]; then continue; fi
        if ! [[ "$soname" =~ $glibc_re ]] && ! [[ "$soname" =~ $system_re ]]; then
          problem "$rel: $soname resolves to $path, outside the bundle"
        fi ;;
    esac
  done < <(env -i /usr/bin/ldd "$f" 2>&1 || true)
done < <(find "$root/bin" "$root/lib" "$root/python" -type f -print0 2>/dev/null)

if [ "$elves" -eq 0 ]; then
  problem "no ELF files under $root/bin, lib or python"
fi
if ! [ -x "$root/bin/jitd" ]; then problem "bin/jitd is missing"; fi
if ! [ -f "$root/lib/libjitd.so.1" ]; then problem "lib/libjitd.so.1 is missing"; fi
if [ "$problems" -ne 0 ]; then
  echo "check_bundle: $problems problem(s) in $root" >&2
  exit 1
fi
echo "check_bundle: $elves ELF files; each needs only glibc, libz, libzstd and the bundle's lib/"
