#!/usr/bin/env bash
# debian_package_test.sh BUILD MODEL_DIR WORK [SOURCE]: makes the Debian package with cpack
# from the build tree, checks its declared dependencies, unpacks it into WORK/root with
# dpkg-deb -x, and runs the binary and the Python module from there: both convert
# MODEL_DIR/model.onnx for gpu-fp16 on its test_data_set_0 and must write the same bytes; with
# SOURCE, examples/cpp_api/convert_model.cc compiled with the package's light header and linked
# with its libovfix.so alone (-lovfix) writes them too.
set -euo pipefail
build=$1 model=$2 work=$3 source=${4:-}
if [ ! -f "$model/model.onnx" ]; then echo "skipped: no $model/model.onnx"; exit 77; fi
rm -rf "$work" && mkdir -p "$work"
(cd "$build" && cpack -G DEB -B "$work/package" > "$work/cpack.log") || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/package/ovfix_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for d in libonnx1 libprotobuf32 libre2-9 ocl-icd-libopencl1 python3-onnx; do
  [[ ",$depends," == *" $d,"* || ",$depends," == *",$d,"* ]] || { echo "no dependency on $d"; exit 1; }
done
dpkg-deb -x "$deb" "$work/root"
root=$work/root
for f in usr/bin/ovfix usr/include/ovfix/ovfix.h usr/include/ovfix/onnx.h usr/lib/libovfix.a \
         usr/lib/libovfix.so usr/lib/libovfix.so.0.1 usr/lib/cmake/ovfix/ovfixTargets.cmake \
         usr/lib/cmake/ovfix/ovfixConfig.cmake usr/share/ovfix/targets/gpu-fp16.target \
         usr/lib/python3/dist-packages/ovfix/__init__.py; do
  [ -e "$root/$f" ] || { echo "not in the package: $f"; exit 1; }
done

"$root/usr/bin/ovfix" --version
data=$model/test_data_set_0
"$root/usr/bin/ovfix" convert "$model/model.onnx" "$work/cli.onnx" --target gpu-fp16 \
  --calibration-data "$data" --quiet
PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 - "$model/model.onnx" "$data" \
  "$work/python.onnx" "$root" <<'PY'
import sys
import ovfix
assert ovfix.__file__.startswith(sys.argv[4]), ovfix.__file__
model, report = ovfix.convert(sys.argv[1], target="gpu-fp16", calibration=sys.argv[2])
assert report["outputs_match"], report
open(sys.argv[3], "wb").write(model.SerializeToString())
print("python module", ovfix.__version__, "from", ovfix.__file__)
PY
cmp "$work/cli.onnx" "$work/python.onnx"
echo "same bytes: $(stat -c %s "$work/cli.onnx") bytes"

if [ -n "$source" ]; then
  c++ -std=c++20 -O1 -I"$root/usr/include" "$source/examples/cpp_api/convert_model.cc" \
    -L"$root/usr/lib" -lovfix -Wl,-rpath,"$root/usr/lib" -o "$work/convert_model"
  "$work/convert_model" "$model/model.onnx" "$work/example.onnx" gpu-fp16 "$data"
  cmp "$work/cli.onnx" "$work/example.onnx"
  echo "the package's libovfix.so alone: same bytes"
fi
