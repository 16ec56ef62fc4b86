#!/usr/bin/env bash
# install_example_test.sh BUILD SOURCE MODEL_DIR WORK: installs BUILD into WORK/prefix and,
# against it, as users would:
#  - builds examples/cpp_api with find_package(ovfix) (ONNX, protobuf and absl made unfindable:
#    the light header's users need none) and checks that its programs need libovfix.so and the
#    C/C++ runtime only (readelf -d), and that the light header pulls in no ONNX, protobuf or
#    absl header;
#  - converts MODEL_DIR/model.onnx for gpu-fp16 with its test_data_set_0 as calibration data
#    (convert_model) and checks that the bytes are those the installed `ovfix convert` writes;
#  - runs user_script, a user's program (criteria per output, an accuracy failure read from the
#    error, a session run many times, a comparison);
#  - compiles and runs the ```cpp blocks of docs/api.md (api_doc_examples.py), the onnx.h ones
#    against the static library (find_package(ovfix COMPONENTS static)).
set -euo pipefail
build=$1 source=$2 model=$3 work=$4
if [ ! -f "$model/model.onnx" ]; then echo "skipped: no $model/model.onnx"; exit 77; fi
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in bin/ovfix include/ovfix/ovfix.h include/ovfix/onnx.h lib/libovfix.a lib/libovfix.so \
         lib/cmake/ovfix/ovfixConfig.cmake lib/cmake/ovfix/ovfixTargets.cmake \
         lib/cmake/ovfix/ovfixStaticTargets.cmake \
         share/ovfix/rules/cast_cleanup.rules share/ovfix/targets/gpu-fp16.target; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; ls -R "$prefix" | head -50; exit 1; }
done

# The light header alone: no ONNX, protobuf or absl header on the way.
echo '#include "ovfix/ovfix.h"' > "$work/header_only.cc"
c++ -std=c++20 -M -I"$prefix/include" "$work/header_only.cc" > "$work/header_only.deps"
if grep -E 'absl|onnx|google/protobuf' "$work/header_only.deps"; then
  echo "ovfix/ovfix.h includes the headers above"; exit 1
fi

launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$source/examples/cpp_api" -B "$work/example" "${generator[@]}" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_DISABLE_FIND_PACKAGE_ONNX=ON -DCMAKE_DISABLE_FIND_PACKAGE_Protobuf=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_absl=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=ON \
  > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/example" > "$work/build.log" || { cat "$work/build.log"; exit 1; }

# What the example's programs need at run time: libovfix.so and the C/C++ runtime.
for program in convert_model user_script; do
  needed=$(readelf -d "$work/example/$program" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort)
  echo "$program NEEDED:" $needed
  for lib in $needed; do
    case $lib in
      libovfix.so.*|libstdc++.so.*|libm.so.*|libgcc_s.so.*|libc.so.*) ;;
      *) echo "$program needs $lib: only libovfix.so and the C/C++ runtime expected"; exit 1 ;;
    esac
  done
  grep -q '^libovfix\.so\.' <<< "$needed" || { echo "$program does not need libovfix.so"; exit 1; }
done

data=$model/test_data_set_0
"$work/example/convert_model" "$model/model.onnx" "$work/api.onnx" gpu-fp16 "$data"
"$prefix/bin/ovfix" convert "$model/model.onnx" "$work/cli.onnx" --target gpu-fp16 \
  --calibration-data "$data" --quiet
cmp "$work/api.onnx" "$work/cli.onnx"
echo "same bytes: $(stat -c %s "$work/api.onnx") bytes"

"$work/example/user_script" "$model"

# docs/api.md's examples, run in a folder with model.onnx and model/test_data_set_0/.
python3 "$source/tests/library/api_doc_examples.py" "$source/docs/api.md" "$work/doc"
cmake -S "$work/doc" -B "$work/doc/build" "${generator[@]}" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" > "$work/doc/configure.log" \
  || { cat "$work/doc/configure.log"; exit 1; }
cmake --build "$work/doc/build" > "$work/doc/build.log" || { cat "$work/doc/build.log"; exit 1; }
mkdir -p "$work/doc/run/model"
cp "$model/model.onnx" "$work/doc/run/"
cp -r "$data" "$work/doc/run/model/"
(cd "$work/doc/run" && "$work/doc/build/doc_light" && "$work/doc/build/doc_onnx")
echo "docs/api.md examples: ran"
