// The ONNX text form (tests, rule files and users' snippets are written in it):
// ParseModelText, then PrintModelText. Property: a parsed model is a consistent graph.
// Printed text is not held to parse again: onnx 1.12's printer leaves initializers out and
// prints a scalar tensor attribute as `int64[] {3}`, which its own parser refuses.
#include <cstdint>
#include <memory>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "ir/text_form.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ovfix;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(text);
  if (!model.ok()) return 0;
  fuzz::ExpectOk((*model)->graph().Verify(), "a parsed model is a consistent graph");
  (void)PrintModelText(**model);
  return 0;
}
