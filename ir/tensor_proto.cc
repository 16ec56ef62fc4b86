#include "ir/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/atomic_file.h"
#include "ir/external_data.h"

namespace ovfix {
namespace {

absl::Status BadTensor(const onnx::TensorProto& proto, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("tensor '", proto.name(), "': ", std::string(what)));
}

template <typename Out, typename Field>
void CopyField(const Field& field, Tensor& t) {
  Out* out = t.data<Out>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Out>(field.Get(i));
}

// Decodes the typed repeated fields (float_data, int32_data, ...) into `t`.
absl::Status DecodeTypedFields(const onnx::TensorProto& proto, Tensor& t) {
  const int64_t n = t.numel();
  auto check = [&](int count, int64_t per_element = 1) -> absl::Status {
    if (count != n * per_element) {
      return BadTensor(proto, absl::StrCat("has ", count, " values, its dims need ", n));
    }
    return absl::OkStatus();
  };
  switch (t.type()) {
    case DataType::kFloat:
      if (auto s = check(proto.float_data_size()); !s.ok()) return s;
      CopyField<float>(proto.float_data(), t);
      return absl::OkStatus();
    case DataType::kComplex64:
      if (auto s = check(proto.float_data_size(), 2); !s.ok()) return s;
      CopyField<float>(proto.float_data(), t);
      return absl::OkStatus();
    case DataType::kDouble:
      if (auto s = check(proto.double_data_size()); !s.ok()) return s;
      CopyField<double>(proto.double_data(), t);
      return absl::OkStatus();
    case DataType::kComplex128:
      if (auto s = check(proto.double_data_size(), 2); !s.ok()) return s;
      CopyField<double>(proto.double_data(), t);
      return absl::OkStatus();
    case DataType::kInt64:
      if (auto s = check(proto.int64_data_size()); !s.ok()) return s;
      CopyField<int64_t>(proto.int64_data(), t);
      return absl::OkStatus();
    case DataType::kUint32:
      if (auto s = check(proto.uint64_data_size()); !s.ok()) return s;
      CopyField<uint32_t>(proto.uint64_data(), t);
      return absl::OkStatus();
    case DataType::kUint64:
      if (auto s = check(proto.uint64_data_size()); !s.ok()) return s;
      CopyField<uint64_t>(proto.uint64_data(), t);
      return absl::OkStatus();
    case DataType::kInt32:
      if (auto s = check(proto.int32_data_size()); !s.ok()) return s;
      CopyField<int32_t>(proto.int32_data(), t);
      return absl::OkStatus();
    case DataType::kInt16:
      if (auto s = check(proto.int32_data_size()); !s.ok()) return s;
      CopyField<int16_t>(proto.int32_data(), t);
      return absl::OkStatus();
    case DataType::kInt8:
      if (auto s = check(proto.int32_data_size()); !s.ok()) return s;
      CopyField<int8_t>(proto.int32_data(), t);
      return absl::OkStatus();
    case DataType::kUint16: case DataType::kFloat16: case DataType::kBfloat16:
      if (auto s = check(proto.int32_data_size()); !s.ok()) return s;
      CopyField<uint16_t>(proto.int32_data(), t);
      return absl::OkStatus();
    case DataType::kUint8: case DataType::kBool:
      if (auto s = check(proto.int32_data_size()); !s.ok()) return s;
      CopyField<uint8_t>(proto.int32_data(), t);
      return absl::OkStatus();
    default:
      return BadTensor(proto, "unsupported element type");
  }
}

absl::StatusOr<Tensor> Decode(const onnx::TensorProto& proto, std::string* movable_raw,
                              const std::string& base_dir) {
  if (!IsKnownDataType(proto.data_type())) {
    return BadTensor(proto, absl::StrCat("unknown element type ", proto.data_type()));
  }
  const auto type = static_cast<DataType>(proto.data_type());
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return BadTensor(proto, absl::StrCat("negative dim ", d));
    if (d > 0 && n > std::numeric_limits<int64_t>::max() / 16 / d) {
      return BadTensor(proto, "too many elements");
    }
    n *= d;
  }
  if (type == DataType::kString) {
    if (proto.string_data_size() != n) {
      return BadTensor(proto, absl::StrCat("has ", proto.string_data_size(),
                                           " strings, its dims need ", n));
    }
    return Tensor(std::move(dims), {proto.string_data().begin(), proto.string_data().end()});
  }
  const size_t bytes = static_cast<size_t>(n) * ElementSize(type);
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    if (base_dir.empty()) return BadTensor(proto, "external data with no model folder");
    ExternalDataFiles files(base_dir);
    auto buffer = files.Resolve(proto, bytes);
    if (!buffer.ok()) return buffer.status();
    return Tensor(type, std::move(dims), *std::move(buffer));
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes) {
      return BadTensor(proto, absl::StrCat("raw_data has ", proto.raw_data().size(),
                                           " bytes, its dims need ", bytes));
    }
    if (movable_raw != nullptr) {
      return Tensor(type, std::move(dims), Buffer::FromString(std::move(*movable_raw)));
    }
    Tensor t(type, std::move(dims));
    if (bytes > 0) std::memcpy(t.raw(), proto.raw_data().data(), bytes);
    return t;
  }
  Tensor t(type, std::move(dims));
  if (auto s = DecodeTypedFields(proto, t); !s.ok()) return s;
  return t;
}

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto,
                                       const std::string& base_dir) {
  return Decode(proto, nullptr, base_dir);
}

absl::StatusOr<Tensor> TensorFromProtoMove(onnx::TensorProto& proto,
                                           const std::string& base_dir) {
  return Decode(proto, proto.has_raw_data() ? proto.mutable_raw_data() : nullptr, base_dir);
}

onnx::TensorProto TensorToProto(const Tensor& t, const std::string& name) {
  onnx::TensorProto proto;
  if (!name.empty()) proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(t.type()));
  for (int64_t d : t.dims()) proto.add_dims(d);
  if (t.type() == DataType::kString) {
    for (const auto& s : t.strings()) proto.add_string_data(s);
  } else {
    proto.set_raw_data(static_cast<const char*>(t.raw()), t.nbytes());
  }
  return proto;
}

absl::StatusOr<Tensor> ReadTensorFile(const std::string& path, std::string* name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  onnx::TensorProto proto;
  if (!proto.ParseFromIstream(&in)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a serialized TensorProto"));
  }
  if (name != nullptr) *name = proto.name();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  auto t = TensorFromProtoMove(proto, dir);
  if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", t.status().message()));
  return t;
}

absl::Status WriteTensorFile(const std::string& path, const Tensor& t, const std::string& name) {
  const onnx::TensorProto proto = TensorToProto(t, name);
  return WriteFileAtomically(path, [&](std::ostream& out) {
    return proto.SerializeToOstream(&out) ? absl::OkStatus()
                                          : absl::InternalError("serialization failed");
  });
}

}  // namespace ovfix
