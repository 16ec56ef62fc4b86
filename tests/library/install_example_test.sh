#!/usr/bin/env bash
# install_example_test.sh BUILD SOURCE MODEL_DIR WORK: installs BUILD into WORK/prefix, builds
# examples/cpp_api against it, converts MODEL_DIR/model.onnx for gpu-fp16 with its
# test_data_set_0 as calibration data, and checks that the bytes are those the installed
# `ovfix convert` writes with the same options.
set -euo pipefail
build=$1 source=$2 model=$3 work=$4
if [ ! -f "$model/model.onnx" ]; then echo "skipped: no $model/model.onnx"; exit 77; fi
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in bin/ovfix include/ovfix/ovfix.h lib/libovfix.a lib/cmake/ovfix/ovfixConfig.cmake \
         share/ovfix/rules/cast_cleanup.rules share/ovfix/targets/gpu-fp16.target; do
  [ -f "$prefix/$f" ] || { echo "not installed: $f"; ls -R "$prefix" | head -50; exit 1; }
done

launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$source/examples/cpp_api" -B "$work/example" "${generator[@]}" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log"
cmake --build "$work/example" > "$work/build.log" || { cat "$work/build.log"; exit 1; }

data=$model/test_data_set_0
"$work/example/convert_model" "$model/model.onnx" "$work/api.onnx" gpu-fp16 "$data"
"$prefix/bin/ovfix" convert "$model/model.onnx" "$work/cli.onnx" --target gpu-fp16 \
  --calibration-data "$data" --quiet
cmp "$work/api.onnx" "$work/cli.onnx"
echo "same bytes: $(stat -c %s "$work/api.onnx") bytes"
