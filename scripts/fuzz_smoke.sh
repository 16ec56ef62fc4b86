#!/usr/bin/env bash
# The fuzz smoke run (docs/fuzzing.md): builds the fuzz targets in build-fuzz (clang,
# libFuzzer, ASan and UBSan; only the targets and what they link) and runs the main build's
# fuzz_smoke.* ctest entries on them. Needs the main build (scripts/test.sh) first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DOVFIX_FUZZ=ON \
  -DCMAKE_CXX_COMPILER=clang++
cmake --build build-fuzz --target ovfix_fuzzers
cd build
ctest --output-on-failure -j2 -L fuzz
