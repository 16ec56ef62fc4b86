#!/usr/bin/env bash
# Set-up command 1: installs the packages, builds ovfix into build/, and runs it on the
# example model in examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --target ovfix
example=examples/gfpgan_modconv
build/ovfix inspect "$example/model.onnx"
build/ovfix run "$example/model.onnx" --input "x=$example/input_0.pb" --input "style=$example/input_1.pb"
echo "fp16-storage (what a GPU running this model in half precision computes):"
build/ovfix run "$example/model.onnx" --input "x=$example/input_0.pb" \
  --input "style=$example/input_1.pb" --precision fp16-storage
echo "ovfix convert --target gpu-fp16 (fp16 weights, fp32 islands where fp16 overflows):"
build/ovfix convert "$example/model.onnx" /tmp/ovfix_example.fp16.onnx --target gpu-fp16 \
  --input "x=$example/input_0.pb" --input "style=$example/input_1.pb"
