#!/usr/bin/env python3
"""api_doc_examples.py DOC OUT: the ```cpp blocks of docs/api.md as two programs in OUT, each
block in order in the body of one main(): light.cc over ovfix/ovfix.h (linked with the shared
library) and onnx.cc over ovfix/onnx.h (the blocks that use onnx:: or absl::, linked with the
static library), with OUT/CMakeLists.txt from api_doc_examples/CMakeLists.txt. Fails when the
page has no block of either kind."""
import os
import re
import shutil
import sys

PRELUDE = {
    "light": """#include <cstdio>
#include <string>
#include <vector>

#include "ovfix/ovfix.h"

static int Fail(const ovfix::Error& error) {
  std::fprintf(stderr, "%s: %s\\n", ovfix::ErrorCodeName(error.code), error.message.c_str());
  return 1;
}
""",
    "onnx": """#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ovfix/onnx.h"

static int Fail(const absl::Status& status) {
  std::fprintf(stderr, "%s\\n", status.ToString().c_str());
  return 1;
}
""",
}


def main():
    doc, out = sys.argv[1], sys.argv[2]
    with open(doc) as f:
        text = f.read()
    blocks = {"light": [], "onnx": []}
    for block in re.findall(r"^```cpp\n(.*?)^```", text, re.S | re.M):
        kind = "onnx" if re.search(r"\b(onnx|absl)::", block) else "light"
        blocks[kind].append(block)
    os.makedirs(out, exist_ok=True)
    for kind, found in blocks.items():
        if not found:
            sys.exit("%s: no ```cpp block for %s" % (doc, kind))
        body = "".join("  // block %d\n" % (i + 1) +
                       "".join("  " + line + "\n" for line in b.splitlines())
                       for i, b in enumerate(found))
        with open(os.path.join(out, kind + ".cc"), "w") as f:
            f.write(PRELUDE[kind] + "\nint main() {\n" + body + "  return 0;\n}\n")
        print("%s.cc: %d block(s)" % (kind, len(found)))
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.copy(os.path.join(here, "api_doc_examples", "CMakeLists.txt"), out)


main()
