#!/usr/bin/env bash
# Installs every build and test dependency of jitd from Debian packages.
# Safe to run again: it installs only what is missing. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  # The compiler toolchain: LLVM 19 for ORC/codegen, clang-19 + compiler-rt
  # for the libFuzzer targets and sanitizer builds.
  llvm-19-dev clang-19 libclang-rt-19-dev libzstd-dev
  # Daemon and wire.
  libboost1.81-dev libflatbuffers-dev flatbuffers-compiler
  # Remote clients: TLS 1.3 (OpenSSL 3); the openssl command makes the
  # remote tests' throwaway certificates (without it their TLS half skips).
  libssl-dev openssl
  # Tests, benchmarks, command line, logging, hashing.
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libfmt-dev
  libspdlog-dev libxxhash-dev
  # Runtime libraries for later layers (GEMM, FFT, f32 convolution).
  libopenblas-dev libkissfft-dev libdnnl-dev
  # numpy (Debian's, in /usr/bin/python3): .npy interop tests.
  python3-numpy
  # pytest (Debian's, in /usr/bin/python3): the Python package's tests.
  python3-pytest
  # Python.h for /usr/bin/python3: the package's C extension jitd._fast
  # (libclient/python/jitd/_fast.c; numpy's headers come with python3-numpy).
  python3-dev
  # torch 1.13 (Debian's, in /usr/bin/python3): the eager peer of
  # bench/peers/elementwise_peer.py.
  python3-torch
  # venv for the project's virtual environment of pinned PyPI packages
  # (JAX, Flax: scripts/venv.sh).
  python3-venv
)

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != *"install ok installed"* ]]; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
