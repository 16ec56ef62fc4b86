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
# onnxruntime for the peer tests (its CPU library ships in the npm package; no install
# scripts run): they fail instead of skipping when it is missing (OVFIX_REQUIRE_ORT).
ort_version=1.30.0
if ! grep -qs "\"version\": \"$ort_version\"" build/ort/node_modules/onnxruntime-node/package.json; then
  npm install --prefix build/ort --ignore-scripts --no-audit --no-fund \
    "onnxruntime-node@$ort_version"
fi
export OVFIX_REQUIRE_ORT=1
cd build
ctest --output-on-failure -j2 -LE fuzz
