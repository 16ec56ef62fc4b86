#include "api/model_proto.h"

#include <stdlib.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "ir/message_text.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/type_check.h"

namespace ovfix {

const char* Version() { return OVFIX_VERSION; }

absl::StatusOr<onnx::ModelProto> LoadModelProto(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Model>> model = ovfix::LoadModel(path);
  if (!model.ok()) return api::OneLine(model.status());
  return ModelToProto(**model);
}

absl::Status SaveModelProto(const onnx::ModelProto& model, const std::string& path) {
  absl::StatusOr<std::unique_ptr<Model>> ir = api::ModelFromMemory(model);
  if (!ir.ok()) return api::OneLine(ir.status());
  return api::OneLine(ovfix::SaveModel(**ir, path));
}

namespace api {

absl::Status OneLine(const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), EscapeControlCharacters(status.message()));
}

absl::StatusOr<std::unique_ptr<Model>> ModelFromMemory(const onnx::ModelProto& proto) {
  if (absl::Status s = RequireInputTypes(proto.graph()); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the model: ", s.message()));
  }
  onnx::ModelProto copy = proto;
  return ModelFromProto(std::move(copy), "", "the model");
}

absl::StatusOr<exec::TensorMap> TensorsFromProtos(const NamedTensors& tensors) {
  exec::TensorMap map;
  for (const auto& [name, proto] : tensors) {
    absl::StatusOr<Tensor> t = TensorFromProto(proto, "");
    if (!t.ok())
      return absl::InvalidArgumentError(absl::StrCat("input ", name, ": ", t.status().message()));
    map.emplace(name, *std::move(t));
  }
  return map;
}

ScratchFolder::ScratchFolder() {
  std::error_code ec;
  std::string pattern = (std::filesystem::temp_directory_path(ec) / "ovfix-XXXXXX").string();
  if (ec) pattern = "/tmp/ovfix-XXXXXX";
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

ScratchFolder::~ScratchFolder() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

}  // namespace api
}  // namespace ovfix
