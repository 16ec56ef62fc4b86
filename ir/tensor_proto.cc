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

// Decodes the typed repeated fields (float_data, int32_data, ...). The count is checked
// against the dims before anything is allocated: a file that is not a TensorProto can parse
// as one with absurd dims.
absl::StatusOr<Tensor> DecodeTypedFields(const onnx::TensorProto& proto, DataType type,
                                         std::vector<int64_t> dims, int64_t n) {
  auto decode = [&](const auto& field, auto tag, int64_t per_element = 1) -> absl::StatusOr<Tensor> {
    using Out = decltype(tag);
    if (field.size() != n * per_element) {
      return BadTensor(proto, absl::StrCat("has ", field.size(), " values, its dims need ",
                                           n * per_element));
    }
    Tensor t = Tensor::Uninitialized(type, std::move(dims));
    Out* out = static_cast<Out*>(t.raw());
    for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Out>(field.Get(i));
    return t;
  };
  switch (type) {
    case DataType::kFloat: return decode(proto.float_data(), float{});
    case DataType::kComplex64: return decode(proto.float_data(), float{}, 2);
    case DataType::kDouble: return decode(proto.double_data(), double{});
    case DataType::kComplex128: return decode(proto.double_data(), double{}, 2);
    case DataType::kInt64: return decode(proto.int64_data(), int64_t{});
    case DataType::kUint32: return decode(proto.uint64_data(), uint32_t{});
    case DataType::kUint64: return decode(proto.uint64_data(), uint64_t{});
    case DataType::kInt32: return decode(proto.int32_data(), int32_t{});
    case DataType::kInt16: return decode(proto.int32_data(), int16_t{});
    case DataType::kInt8: return decode(proto.int32_data(), int8_t{});
    case DataType::kUint16: case DataType::kFloat16: case DataType::kBfloat16:
      return decode(proto.int32_data(), uint16_t{});
    case DataType::kUint8: case DataType::kBool: return decode(proto.int32_data(), uint8_t{});
    default: return BadTensor(proto, "unsupported element type");
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
  return DecodeTypedFields(proto, type, std::move(dims), n);
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
