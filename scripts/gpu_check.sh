#!/bin/bash
# The OpenCL executor on a GPU machine that has no Debian packages of its own (how the H100
# figures in docs/design.md were taken).
#
#   bash scripts/gpu_check.sh bundle OUT.tar.xz
#       here, after scripts/build.sh: ovfix, the OpenCL test binary and the shared libraries
#       they load (all but the C and C++ runtimes) in one archive.
#   bash scripts/gpu_check.sh run BUNDLE.tar.xz MODELS_DIR LOG_DIR [MODEL ...]
#       there: registers NVIDIA's OpenCL driver when no loader file names it, then writes to
#       LOG_DIR the OpenCL tests' log and, per model of MODELS_DIR (NAME/model.onnx,
#       NAME/test_data_set_0), runs in fp32, fp16-storage and fp16 against the test data,
#       `compare` cpu:fp32 against opencl:fp16, the gpu-fp16 conversion run in fp16, and times;
#       the same for the OpenCL tests' device-coverage models (written by the test binary).
#       The test binary looks for the models where it was built (../shared beside the
#       checkout): link MODELS_DIR's parent there for its model tests.
set -euo pipefail

bundle() {
  local out=$1 root tmp
  root=$(cd "$(dirname "$0")/.." && pwd)
  tmp=$(mktemp -d)
  mkdir -p "$tmp/bin" "$tmp/lib"
  cp "$root/build/ovfix" "$root/build/tests/ovfix_opencl_tests" "$tmp/bin/"
  strip "$tmp/bin/"*
  ldd "$root/build/ovfix" "$root/build/tests/ovfix_opencl_tests" | awk '/=>/ {print $3}' |
    sort -u | while read -r lib; do
      case $(basename "$lib") in
        libc.so* | libm.so* | libstdc++* | libgcc_s*) ;;
        *) cp -L "$lib" "$tmp/lib/" ;;
      esac
    done
  tar -C "$tmp" -cJf "$out" bin lib
  rm -rf "$tmp"
}

run() {
  local archive=$1 models=$2 logs=$3
  shift 3
  # Global: the EXIT trap runs after this function's locals are gone.
  run_dir=$(mktemp -d)
  trap 'rm -rf "$run_dir"' EXIT
  local dir=$run_dir
  tar -C "$dir" -xJf "$archive"
  export LD_LIBRARY_PATH=$dir/lib
  mkdir -p "$logs"
  if ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
    local nv
    nv=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 \
      /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -1 || true)
    if [ -n "$nv" ]; then
      mkdir -p "$dir/icd" && echo "$nv" >"$dir/icd/nvidia.icd"
      export OCL_ICD_VENDORS=$dir/icd
    fi
  fi
  local ovfix=$dir/bin/ovfix
  "$ovfix" devices | tee "$logs/devices.txt"
  # The device-coverage models (one per class of export: window attention, detector,
  # segmentation, quantized conv net, LSTM) are written beside the shared ones.
  # OVFIX_TESTS_TIMEOUT (seconds) bounds the test binary on a short lease.
  OVFIX_WRITE_COVERAGE_MODELS=$dir/coverage timeout "${OVFIX_TESTS_TIMEOUT:-1800}" \
    "$dir/bin/ovfix_opencl_tests" >"$logs/opencl_tests.log" 2>&1 || true
  grep -E '^\[  (PASSED|FAILED)' "$logs/opencl_tests.log" || true
  local paths=()
  if [ $# -eq 0 ]; then
    for m in "$models"/*/model.onnx "$dir"/coverage/*/model.onnx; do
      [ -f "$m" ] && paths+=("$(dirname "$m")")
    done
  else
    for name in "$@"; do paths+=("$models/$name"); done
  fi
  for path in "${paths[@]}"; do
    local name model=$path/model.onnx data=$path/test_data_set_0
    name=$(basename "$path")
    {
      for precision in fp32 fp16-storage fp16; do
        echo "--- $name opencl:$precision"
        "$ovfix" run "$model" --backend opencl --precision "$precision" --test-data "$data" \
          --rtol 1e-2 --atol 1e-3 2>&1 | grep -v '^[a-zA-Z0-9_/.]* *float' || true
      done
      echo "--- $name compare cpu:fp32 opencl:fp16"
      "$ovfix" compare "$model" --ref cpu:fp32 --test opencl:fp16 --test-data "$data" 2>&1 |
        tail -2 || true
      echo "--- $name converted (gpu-fp16), opencl:fp16"
      "$ovfix" convert "$model" "$dir/$name.fp16.onnx" --target gpu-fp16 \
        --calibration-data "$data" 2>&1 | tail -1 || true
      "$ovfix" run "$dir/$name.fp16.onnx" --backend opencl --precision fp16 --test-data "$data" \
        --rtol 1e-2 --atol 1e-3 2>&1 | grep -E 'matches|MISMATCH|^ovfix' || true
      echo "--- $name times"
      for precision in fp32 fp16; do
        "$ovfix" run "$model" --backend opencl --precision "$precision" --test-data "$data" \
          --repeat 20 --rtol 1 --atol 1 2>&1 | grep '^ran' || true
      done
      "$ovfix" run "$model" --test-data "$data" --repeat 20 2>&1 | grep '^ran' || true
    } | tee "$logs/$name.txt"
  done
}

case ${1:-} in
  bundle) bundle "$2" ;;
  run) shift && run "$@" ;;
  *)
    echo "usage: gpu_check.sh bundle OUT.tar.xz | run BUNDLE.tar.xz MODELS_DIR LOG_DIR [MODEL ...]" >&2
    exit 2
    ;;
esac
