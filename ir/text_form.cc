#include "ir/text_form.h"

#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/model_io.h"
#include "onnx/defs/parser.h"
#include "onnx/defs/printer.h"

namespace ovfix {

absl::StatusOr<std::unique_ptr<Model>> ParseModelText(std::string_view text) {
  std::string source(text);
  if (!absl::StartsWith(absl::StripLeadingAsciiWhitespace(source), "<")) {
    source = absl::StrCat("<ir_version: 8, opset_import: [\"\" : 17]>\n", source);
  }
  onnx::ModelProto proto;
  // onnx's parser reports most errors in its status but throws from std::stol/std::stof on a
  // malformed number ("{-1}8" in an int list): both are bad text, not a crash.
  try {
    onnx::OnnxParser parser(source.c_str());
    auto status = parser.Parse(proto);
    if (!status.IsOK()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot parse model text: ", status.ErrorMessage()));
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot parse model text: a malformed literal (", e.what(), ")"));
  }
  return ModelFromProto(std::move(proto), "", "model text");
}

std::string PrintModelText(const Model& model) {
  std::ostringstream out;
  out << "<ir_version: " << model.extras().ir_version() << ", opset_import: [";
  const char* sep = "";
  for (const auto& o : model.extras().opset_import()) {
    out << sep << '"' << o.domain() << "\" : " << o.version();
    sep = ", ";
  }
  out << "]>\n" << GraphToProto(model.graph()) << "\n";
  return out.str();
}

}  // namespace ovfix
