#!/usr/bin/env bash
# header_compile.sh [SOURCE] [RUNS]: how long a file that includes only ovfix/ovfix.h (the
# light header) and one that includes only ovfix/onnx.h take to compile, as a user's
# `g++ -std=c++20 -O2 -c` would (docs/api.md); the best of RUNS (5) each, in seconds, beside
# the standard headers the light one includes, for scale. Not a test: the machine's load moves
# the figures.
set -euo pipefail
source=${1:-$(cd "$(dirname "$0")/.." && pwd)}
runs=${2:-5}
cxx=${CXX:-g++}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

best() {  # best SOURCE_TEXT: the shortest of $runs compiles, in seconds
  printf '%s\n' "$1" > "$work/t.cc"
  local best=
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s.%N)
    # ONNX_ML and ONNX_NAMESPACE: what the onnx CMake package gives its users.
    "$cxx" -std=c++20 -O2 -DONNX_ML=1 -DONNX_NAMESPACE=onnx -I"$source/include" -c "$work/t.cc" \
      -o "$work/t.o"
    end=$(date +%s.%N)
    best=$(echo "$start $end ${best:-1e9}" | awk '{t = $2 - $1; print (t < $3 ? t : $3)}')
  done
  printf '%.3f' "$best"
}

std='#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>'
echo "standard headers alone:  $(best "$std") s"
echo "ovfix/ovfix.h:           $(best '#include "ovfix/ovfix.h"') s"
echo "ovfix/onnx.h:            $(best '#include "ovfix/onnx.h"') s"
