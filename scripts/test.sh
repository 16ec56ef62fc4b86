#!/usr/bin/env bash
# Set-up command 2: installs the packages, builds everything, and runs the whole test suite.
# The models and ONNX node tests are read from ../shared when it is there.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
# The fuzz targets for the smoke run that ctest runs (fuzz_smoke.*): clang, libFuzzer, ASan and
# UBSan, only the targets and what they link (docs/fuzzing.md).
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DOVFIX_FUZZ=ON \
  -DCMAKE_CXX_COMPILER=clang++
cmake --build build-fuzz --target ovfix_fuzzers
cd build
ctest --output-on-failure -j2
