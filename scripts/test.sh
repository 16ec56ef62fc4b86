#!/usr/bin/env bash
# Set-up command 2: installs the packages, builds the project, and runs its test suite (ctest:
# unit, conversion, CLI, library, install, package and Python tests). The models and ONNX node
# tests are read from ../shared when it is there. The sanitizer fuzz smoke run is a separate
# build (scripts/fuzz_smoke.sh; CI runs both, .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
cd build
ctest --output-on-failure -j2 -LE fuzz
