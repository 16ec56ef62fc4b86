#!/usr/bin/env bash
# Installs the Debian 12 packages ovfix builds and tests with (run as root, or with sudo).
set -euo pipefail
packages=(
  g++ cmake ninja-build pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler libabsl-dev libcli11-dev libre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  ocl-icd-opencl-dev opencl-clhpp-headers opencl-c-headers pocl-opencl-icd
  clang libclang-rt-14-dev  # the fuzz build (docs/fuzzing.md): clang 14 and its libFuzzer
  clang-format              # the format check (.clang-format)
  nodejs                    # onnxruntime, the tests' peer (scripts/test.sh installs it from npm)
  # The Python module (python/, docs/python.md) and its tests; the build skips the module
  # without python3-dev and pybind11-dev.
  python3-dev pybind11-dev python3-onnx python3-numpy python3-pytest
)
# npm comes with a nodejs from elsewhere (NodeSource); Debian's nodejs needs Debian's npm.
command -v npm > /dev/null 2>&1 || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
