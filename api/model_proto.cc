#include "api/model_proto.h"

#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/message_text.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/type_check.h"

namespace ovfix {

absl::StatusOr<onnx::ModelProto> LoadModelProto(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Model>> model = ovfix::LoadModel(path);
  if (!model.ok()) return api::OneLine(api::Tagged(model.status(), "model"));
  return ModelToProto(**model);
}

std::string ErrorKind(const absl::Status& status) {
  if (auto kind = status.GetPayload(kErrorKindPayload)) return std::string(*kind);
  if (status.GetPayload(kConversionReportPayload)) return "accuracy";
  return "";
}

absl::Status SaveModelProto(const onnx::ModelProto& model, const std::string& path) {
  absl::StatusOr<std::unique_ptr<Model>> ir = api::ModelFromMemory(model);
  if (!ir.ok()) return api::OneLine(ir.status());
  return api::OneLine(ovfix::SaveModel(**ir, path));
}

absl::Status ToStatus(const Error& error) {
  if (error.ok()) return absl::OkStatus();
  absl::Status status(static_cast<absl::StatusCode>(error.code), error.message);
  if (!error.kind.empty()) status.SetPayload(kErrorKindPayload, absl::Cord(error.kind));
  if (error.report) status.SetPayload(kConversionReportPayload, absl::Cord(error.report->json));
  return status;
}

Error ToError(const absl::Status& status) {
  if (status.ok()) return {};
  return {static_cast<ErrorCode>(status.code()), ErrorKind(status), std::string(status.message()),
          std::nullopt};
}

absl::StatusOr<onnx::TensorProto> ToTensorProto(const OnnxTensor& tensor) {
  const std::string what = tensor.name().empty() ? "a tensor" : "'" + tensor.name() + "'";
  if (tensor.type() == ElementType::kString || tensor.type() == ElementType::kUndefined) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": no elements of type ", static_cast<int>(tensor.type())));
  }
  for (int64_t d : tensor.shape()) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat(what, ": negative dimension ", d));
  }
  const size_t size = ElementSize(tensor.type());
  if (size != 0 && tensor.bytes().size() != size * static_cast<size_t>(tensor.element_count())) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", tensor.bytes().size(), " bytes for ", tensor.element_count(), " element(s) of ",
        ElementTypeName(tensor.type()), " (", size * tensor.element_count(), " bytes)"));
  }
  onnx::TensorProto proto;
  proto.set_name(tensor.name());
  proto.set_data_type(static_cast<int32_t>(tensor.type()));
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  proto.set_raw_data(tensor.bytes());
  return proto;
}

absl::StatusOr<OnnxTensor> ToOnnxTensor(const onnx::TensorProto& proto) {
  if (proto.data_type() == onnx::TensorProto::STRING) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", proto.name(), "': strings are not held by OnnxTensor"));
  }
  absl::StatusOr<Tensor> t = TensorFromProto(proto, "");
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", proto.name(), "': ", t.status().message()));
  }
  return OnnxTensor::FromBytes(static_cast<ElementType>(t->type()), t->dims(), t->raw(),
                               t->nbytes(), proto.name());
}

absl::StatusOr<onnx::ModelProto> ToModelProto(const OnnxModel& model) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(model.bytes())) {
    return api::Tagged(absl::InvalidArgumentError("the model: not a serialized onnx.ModelProto"),
                       "model");
  }
  return proto;
}

absl::StatusOr<OnnxModel> ToOnnxModel(const onnx::ModelProto& model) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    return absl::InvalidArgumentError(
        "the model: cannot be serialized (over 2 GB: save it with SaveModelProto)");
  }
  return OnnxModel::FromBytes(std::move(bytes));
}

namespace api {

absl::Status OneLine(const absl::Status& status) {
  if (status.ok()) return status;
  const absl::StatusCode code = status.code();
  std::string message(status.message());
  bool option = false;
  if (code == absl::StatusCode::kInvalidArgument) {
    // A message that starts with a command-line flag ("--accuracy y=max:1: ...") names the
    // option as the API does ("accuracy y=max:1: ..."); it and an unknown target, backend or
    // precision are errors of an option.
    if (absl::StartsWith(message, "--") && message.size() > 2 &&
        std::islower(static_cast<unsigned char>(message[2]))) {
      const size_t end = message.find_first_of(" =:", 2);
      std::string flag = message.substr(2, end == std::string::npos ? end : end - 2);
      std::replace(flag.begin(), flag.end(), '-', '_');
      message = flag + (end == std::string::npos ? "" : message.substr(end));
      option = true;
    }
    for (const char* prefix : {"unknown target", "unknown backend", "unknown precision"}) {
      option = option || absl::StartsWith(message, prefix);
    }
  }
  absl::Status line(code, EscapeControlCharacters(message));
  status.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { line.SetPayload(url, payload); });
  if (option && !line.GetPayload(kErrorKindPayload)) return Tagged(line, "option");
  return line;
}

absl::Status Tagged(absl::Status status, absl::string_view kind) {
  if (!status.ok()) status.SetPayload(kErrorKindPayload, absl::Cord(kind));
  return status;
}

absl::StatusOr<std::unique_ptr<Model>> ModelFromMemory(const onnx::ModelProto& proto) {
  if (absl::Status s = RequireInputTypes(proto.graph()); !s.ok()) {
    return Tagged(absl::InvalidArgumentError(absl::StrCat("the model: ", s.message())), "model");
  }
  onnx::ModelProto copy = proto;
  absl::StatusOr<std::unique_ptr<Model>> model = ModelFromProto(std::move(copy), "", "the model");
  if (!model.ok()) return Tagged(model.status(), "model");
  return model;
}

absl::StatusOr<exec::TensorMap> TensorsFromProtos(const NamedTensorProtos& tensors) {
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
