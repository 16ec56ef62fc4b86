#!/usr/bin/env bash
# Set-up command 2: installs the packages, builds everything, and runs the whole test suite.
# The models and ONNX node tests are read from ../shared when it is there.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
cd build
ctest --output-on-failure -j2
