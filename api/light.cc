// The light surface (include/ovfix/ovfix.h) over the calls of ovfix/onnx.h: models and
// tensors become protos on the way in and back on the way out, statuses become Errors. Every
// function the light header declares is defined here, so that the shared library
// (api/CMakeLists.txt) exports this file's symbols and nothing of the implementation.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <ostream>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "api/model_proto.h"
#include "ir/atomic_file.h"
#include "ir/data_type.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"
#include "ovfix/onnx.h"

namespace ovfix {
namespace {

Error AsError(const absl::Status& status) { return ToError(status); }

template <typename T>
Result<T> AsResult(absl::StatusOr<T> result) {
  if (!result.ok()) return AsError(result.status());
  return *std::move(result);
}

Result<void> AsResult(const absl::Status& status) {
  if (!status.ok()) return AsError(status);
  return {};
}

// The IR's tensor over a copy of `t`'s bytes; InvalidArgument when they do not fit.
absl::StatusOr<Tensor> ToIrTensor(const OnnxTensor& t) {
  absl::StatusOr<onnx::TensorProto> proto = ToTensorProto(t);  // checks type, shape and size
  if (!proto.ok()) return proto.status();
  const auto type = static_cast<DataType>(t.type());
  if (!IsKnownDataType(static_cast<int32_t>(type))) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", t.name(), "': unknown element type ", static_cast<int>(type)));
  }
  Tensor ir = Tensor::Uninitialized(type, t.shape());
  if (ir.nbytes() != t.bytes().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", t.name(), "': ", t.bytes().size(), " bytes for ", ir.nbytes()));
  }
  if (ir.nbytes() > 0) std::memcpy(ir.raw(), t.bytes().data(), ir.nbytes());
  return ir;
}

OnnxTensor FromIrTensor(const Tensor& t, std::string name) {
  return OnnxTensor::FromBytes(static_cast<ElementType>(t.type()), t.dims(), t.raw(), t.nbytes(),
                               std::move(name));
}

// `values` as a tensor of `type` (converted from `from`, the values' own type).
template <typename T>
OnnxTensor Converted(DataType from, DataType type, std::vector<int64_t> shape,
                     const std::vector<T>& values, std::string name) {
  const Tensor given = Tensor::FromVector(from, {static_cast<int64_t>(values.size())}, values);
  const Tensor converted = ConvertTensor(given, type);
  OnnxTensor t = OnnxTensor::FromBytes(static_cast<ElementType>(type), std::move(shape),
                                       converted.raw(), converted.nbytes(), std::move(name));
  return t;
}

// The elements of `t` as `T` (`type` its DataType); empty where the bytes do not fit.
template <typename T>
std::vector<T> Elements(const OnnxTensor& t, DataType type) {
  absl::StatusOr<Tensor> ir = ToIrTensor(t);
  if (!ir.ok() ||
      !(IsFloatingPoint(ir->type()) || IsInteger(ir->type()) || ir->type() == DataType::kBool)) {
    return {};
  }
  const Tensor converted = ConvertTensor(*ir, type);
  const T* data = converted.data<T>();
  return std::vector<T>(data, data + converted.numel());
}

absl::StatusOr<NamedTensorProtos> ToProtos(const NamedTensors& tensors) {
  NamedTensorProtos protos;
  for (const auto& [name, tensor] : tensors) {
    absl::StatusOr<onnx::TensorProto> proto = ToTensorProto(tensor);
    if (!proto.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "': ", proto.status().message()));
    }
    proto->set_name(name);
    protos[name] = *std::move(proto);
  }
  return protos;
}

absl::StatusOr<std::vector<OnnxTensor>> FromProtos(const std::vector<onnx::TensorProto>& protos) {
  std::vector<OnnxTensor> tensors;
  for (const onnx::TensorProto& proto : protos) {
    absl::StatusOr<OnnxTensor> t = ToOnnxTensor(proto);
    if (!t.ok()) return t.status();
    tensors.push_back(*std::move(t));
  }
  return tensors;
}

}  // namespace

const char* Version() { return OVFIX_VERSION; }

const char* ElementTypeName(ElementType type) {
  return DataTypeName(static_cast<DataType>(type)).data();  // literals: NUL-terminated
}

size_t ElementSize(ElementType type) {
  const auto t = static_cast<DataType>(type);
  if (!IsKnownDataType(static_cast<int32_t>(type)) || t == DataType::kString || IsPacked(t)) {
    return 0;
  }
  return ovfix::ElementSize(t);
}

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "OK";
    case ErrorCode::kCancelled:
      return "Cancelled";
    case ErrorCode::kUnknown:
      return "Unknown";
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kNotFound:
      return "NotFound";
    case ErrorCode::kFailedPrecondition:
      return "FailedPrecondition";
    case ErrorCode::kUnimplemented:
      return "Unimplemented";
    case ErrorCode::kInternal:
      return "Internal";
  }
  return "Error";
}

namespace internal {
void AbortOnError(const Error& error) {
  std::fprintf(stderr, "ovfix: the value of a Result that holds an error (%s): %s\n",
               ErrorCodeName(error.code), error.message.c_str());
  std::abort();
}
}  // namespace internal

// ---- OnnxTensor ----

OnnxTensor OnnxTensor::FromBytes(ElementType type, std::vector<int64_t> shape, const void* data,
                                 size_t size, std::string name) {
  OnnxTensor t;
  t.type_ = type;
  t.shape_ = std::move(shape);
  if (size > 0) t.bytes_.assign(static_cast<const char*>(data), size);
  t.name_ = std::move(name);
  return t;
}

OnnxTensor OnnxTensor::FromFloats(std::vector<int64_t> shape, const std::vector<float>& values,
                                  std::string name) {
  return FromBytes(ElementType::kFloat, std::move(shape), values.data(),
                   values.size() * sizeof(float), std::move(name));
}

OnnxTensor OnnxTensor::FromFloat16s(std::vector<int64_t> shape, const std::vector<float>& values,
                                    std::string name) {
  return Converted(DataType::kFloat, DataType::kFloat16, std::move(shape), values, std::move(name));
}

OnnxTensor OnnxTensor::FromBfloat16s(std::vector<int64_t> shape, const std::vector<float>& values,
                                     std::string name) {
  return Converted(DataType::kFloat, DataType::kBfloat16, std::move(shape), values,
                   std::move(name));
}

OnnxTensor OnnxTensor::FromDoubles(std::vector<int64_t> shape, const std::vector<double>& values,
                                   std::string name) {
  return FromBytes(ElementType::kDouble, std::move(shape), values.data(),
                   values.size() * sizeof(double), std::move(name));
}

OnnxTensor OnnxTensor::FromInt64s(std::vector<int64_t> shape, const std::vector<int64_t>& values,
                                  std::string name) {
  return FromBytes(ElementType::kInt64, std::move(shape), values.data(),
                   values.size() * sizeof(int64_t), std::move(name));
}

OnnxTensor OnnxTensor::FromInt32s(std::vector<int64_t> shape, const std::vector<int32_t>& values,
                                  std::string name) {
  return FromBytes(ElementType::kInt32, std::move(shape), values.data(),
                   values.size() * sizeof(int32_t), std::move(name));
}

int64_t OnnxTensor::element_count() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

std::vector<float> OnnxTensor::ToFloats() const { return Elements<float>(*this, DataType::kFloat); }
std::vector<double> OnnxTensor::ToDoubles() const {
  return Elements<double>(*this, DataType::kDouble);
}
std::vector<int64_t> OnnxTensor::ToInt64s() const {
  return Elements<int64_t>(*this, DataType::kInt64);
}

Result<OnnxTensor> LoadTensor(const std::string& path) {
  std::string name;
  absl::StatusOr<Tensor> t = ReadTensorFile(path, &name);
  if (!t.ok()) return AsError(t.status());
  if (t->type() == DataType::kString) {
    return Error{ErrorCode::kInvalidArgument, "",
                 path + ": a tensor of strings (OnnxTensor holds no strings)", std::nullopt};
  }
  return FromIrTensor(*t, name);
}

Result<void> SaveTensor(const OnnxTensor& tensor, const std::string& path) {
  absl::StatusOr<Tensor> t = ToIrTensor(tensor);
  if (!t.ok()) return AsError(t.status());
  return AsResult(WriteTensorFile(path, *t, tensor.name()));
}

// ---- OnnxModel ----

Result<OnnxModel> OnnxModel::Load(const std::string& path) {
  absl::StatusOr<onnx::ModelProto> proto = LoadModelProto(path);
  if (!proto.ok()) return AsError(proto.status());
  return AsResult(ToOnnxModel(*proto));
}

OnnxModel OnnxModel::FromBytes(std::string bytes) {
  OnnxModel model;
  model.bytes_ = std::move(bytes);
  return model;
}

// The bytes as they are (those Convert returns are the command line's file), written
// atomically; a missing folder is NotFound, as for ConvertFile.
Result<void> OnnxModel::Save(const std::string& path) const {
  std::error_code ec;
  const std::filesystem::path folder = std::filesystem::absolute(path, ec).parent_path();
  if (!std::filesystem::is_directory(folder, ec)) {
    return Error{ErrorCode::kNotFound, "", folder.string() + ": no such folder", std::nullopt};
  }
  const absl::Status written = WriteFileAtomically(path, [&](std::ostream& out) {
    out.write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
    return out ? absl::OkStatus() : absl::InternalError("write failed");
  });
  if (!written.ok()) {
    return Error{ErrorCode::kInternal, "", path + ": " + std::string(written.message()),
                 std::nullopt};
  }
  return {};
}

// ---- calls ----

std::vector<OptionInfo> ConversionOptionList() { return api::OptionList(); }

Result<void> SetOption(ConversionOptions& options, const std::string& name,
                       const std::string& value) {
  return AsResult(SetOptionStatus(options, name, value));
}

Result<ConversionReport> ConvertFile(const std::string& input, const std::string& output,
                                     const ConversionOptions& options) {
  return AsResult(ConvertFileStatus(input, output, options));
}

Result<ConvertedModel> Convert(const OnnxModel& model, const ConversionOptions& options) {
  absl::StatusOr<onnx::ModelProto> proto = ToModelProto(model);
  if (!proto.ok()) return AsError(proto.status());
  ConversionReport report;
  absl::StatusOr<ConvertedModelProto> converted = Convert(*proto, options, &report);
  if (!converted.ok()) {
    Error error = AsError(converted.status());
    if (error.kind == "accuracy") error.report = std::move(report);
    return error;
  }
  absl::StatusOr<OnnxModel> bytes = ToOnnxModel(converted->model);
  if (!bytes.ok()) return AsError(bytes.status());
  return ConvertedModel{*std::move(bytes), std::move(converted->report)};
}

Result<std::vector<OnnxTensor>> Run(const OnnxModel& model, const NamedTensors& inputs,
                                    const RunOptions& options) {
  absl::StatusOr<onnx::ModelProto> proto = ToModelProto(model);
  if (!proto.ok()) return AsError(proto.status());
  absl::StatusOr<NamedTensorProtos> feeds = ToProtos(inputs);
  if (!feeds.ok()) return AsError(feeds.status());
  absl::StatusOr<std::vector<onnx::TensorProto>> outputs = Run(*proto, *feeds, options);
  if (!outputs.ok()) return AsError(outputs.status());
  return AsResult(FromProtos(*outputs));
}

const OnnxTensor* FindTensor(const std::vector<OnnxTensor>& tensors, const std::string& name) {
  for (const OnnxTensor& t : tensors) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

Result<Session> Session::Create(const OnnxModel& model, const RunOptions& options) {
  absl::StatusOr<onnx::ModelProto> proto = ToModelProto(model);
  if (!proto.ok()) return AsError(proto.status());
  absl::StatusOr<std::unique_ptr<ProtoSession>> session = ProtoSession::Create(*proto, options);
  if (!session.ok()) return AsError(session.status());
  return Session(session->release());
}

Session& Session::operator=(Session&& other) noexcept {
  if (this != &other) {
    delete impl_;
    impl_ = std::exchange(other.impl_, nullptr);
  }
  return *this;
}

Session::~Session() { delete impl_; }

namespace {
const std::vector<std::string>& NoNames() {
  static const std::vector<std::string> none;
  return none;
}
}  // namespace

const std::vector<std::string>& Session::input_names() const {
  return impl_ != nullptr ? impl_->input_names() : NoNames();
}

const std::vector<std::string>& Session::output_names() const {
  return impl_ != nullptr ? impl_->output_names() : NoNames();
}

std::vector<ElementType> Session::input_types() const {
  std::vector<ElementType> types;
  if (impl_ == nullptr) return types;
  for (int32_t t : impl_->input_types()) types.push_back(static_cast<ElementType>(t));
  return types;
}

Result<std::vector<OnnxTensor>> Session::Run(const NamedTensors& inputs, bool cast) {
  if (impl_ == nullptr) {
    return Error{ErrorCode::kFailedPrecondition, "", "the session was moved from", std::nullopt};
  }
  absl::StatusOr<NamedTensorProtos> feeds = ToProtos(inputs);
  if (!feeds.ok()) return AsError(feeds.status());
  absl::StatusOr<std::vector<onnx::TensorProto>> outputs = impl_->Run(*feeds, cast);
  if (!outputs.ok()) return AsError(outputs.status());
  return AsResult(FromProtos(*outputs));
}

Result<Comparison> CompareModels(const OnnxModel& reference, const OnnxModel& candidate,
                                 const NamedTensors& inputs, std::optional<double> tolerance,
                                 const RunOptions& options,
                                 const std::vector<std::string>& accuracy) {
  absl::StatusOr<onnx::ModelProto> a = ToModelProto(reference);
  if (!a.ok()) return AsError(a.status());
  absl::StatusOr<onnx::ModelProto> b = ToModelProto(candidate);
  if (!b.ok()) return AsError(b.status());
  absl::StatusOr<NamedTensorProtos> feeds = ToProtos(inputs);
  if (!feeds.ok()) return AsError(feeds.status());
  return AsResult(CompareModels(*a, *b, *feeds, tolerance, options, accuracy));
}

Result<Comparison> CompareBackends(const OnnxModel& model, const RunOptions& reference,
                                   const RunOptions& candidate, const NamedTensors& inputs,
                                   std::optional<double> tolerance,
                                   const std::vector<std::string>& accuracy) {
  absl::StatusOr<onnx::ModelProto> proto = ToModelProto(model);
  if (!proto.ok()) return AsError(proto.status());
  absl::StatusOr<NamedTensorProtos> feeds = ToProtos(inputs);
  if (!feeds.ok()) return AsError(feeds.status());
  return AsResult(CompareBackends(*proto, reference, candidate, *feeds, tolerance, accuracy));
}

}  // namespace ovfix
