#!/usr/bin/env bash
# Creates (once) the project's virtual environment .venv from Debian's
# python3 and installs the pinned PyPI packages into it.
#   bash scripts/venv.sh           JAX, jaxlib, Flax, pytest (scripts/requirements-jax.txt)
#   bash scripts/venv.sh --peers   also ONNX Runtime and onnx (scripts/requirements-peers.txt)
# Environment: VENV_DIR (default .venv). Prints the interpreter's path last.
# Safe to run again: pip skips what is installed at the pinned version.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${VENV_DIR:-.venv}"

requirements=(-r scripts/requirements-jax.txt)
if [ "${1:-}" = "--peers" ]; then requirements+=(-r scripts/requirements-peers.txt); fi

if [ ! -x "$venv/bin/python" ]; then
  echo "venv: creating $venv"
  /usr/bin/python3 -m venv "$venv"
fi
# The stamp holds the requirements' hash: an unchanged set costs no pip run.
stamp="$venv/.jitd-requirements"
want="$(cat scripts/requirements-jax.txt ${1:+scripts/requirements-peers.txt} | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "venv: installing ${requirements[*]}"
  "$venv/bin/python" -m pip install --disable-pip-version-check -q "${requirements[@]}"
  echo "$want" > "$stamp"
fi
echo "$(cd "$venv" && pwd)/bin/python"
