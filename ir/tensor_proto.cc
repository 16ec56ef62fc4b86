#include "ir/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/atomic_file.h"
#include "ir/external_data.h"
#include "ir/status_macros.h"

namespace ovfix {
namespace {

absl::Status BadTensor(const onnx::TensorProto& proto, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("tensor '", proto.name(), "': ", std::string(what)));
}

// Calls fn(field, tag, per_element) with the typed repeated field (float_data, int32_data,
// ...) that holds elements of `type`, a value of the C++ type an element is stored as, and
// how many of the field's values make one element. False for types no such field holds.
template <typename Fn>
bool VisitTypedField(const onnx::TensorProto& proto, DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat:
      fn(proto.float_data(), float{}, 1);
      return true;
    case DataType::kComplex64:
      fn(proto.float_data(), float{}, 2);
      return true;
    case DataType::kDouble:
      fn(proto.double_data(), double{}, 1);
      return true;
    case DataType::kComplex128:
      fn(proto.double_data(), double{}, 2);
      return true;
    case DataType::kInt64:
      fn(proto.int64_data(), int64_t{}, 1);
      return true;
    case DataType::kUint32:
      fn(proto.uint64_data(), uint32_t{}, 1);
      return true;
    case DataType::kUint64:
      fn(proto.uint64_data(), uint64_t{}, 1);
      return true;
    case DataType::kInt32:
      fn(proto.int32_data(), int32_t{}, 1);
      return true;
    case DataType::kInt16:
      fn(proto.int32_data(), int16_t{}, 1);
      return true;
    case DataType::kInt8:
      fn(proto.int32_data(), int8_t{}, 1);
      return true;
    case DataType::kUint16:
    case DataType::kFloat16:
    case DataType::kBfloat16:
      fn(proto.int32_data(), uint16_t{}, 1);
      return true;
    case DataType::kUint8:
    case DataType::kBool:
      fn(proto.int32_data(), uint8_t{}, 1);
      return true;
    default:
      return false;
  }
}

// What a TensorProto's fields say about its tensor, checked against each other before
// anything is allocated: a file that is not a TensorProto can parse as one with absurd dims,
// and a model can carry a tensor whose bytes do not fill its dims.
struct Layout {
  DataType type;
  std::vector<int64_t> dims;
  int64_t elements = 1;
  size_t bytes = 0;  // of the decoded tensor (0 for strings)
};

absl::StatusOr<Layout> CheckedLayout(const onnx::TensorProto& proto) {
  if (!IsKnownDataType(proto.data_type())) {
    return BadTensor(proto, absl::StrCat("unknown element type ", proto.data_type()));
  }
  Layout layout{static_cast<DataType>(proto.data_type()),
                {proto.dims().begin(), proto.dims().end()}};
  for (int64_t d : layout.dims) {
    if (d < 0) return BadTensor(proto, absl::StrCat("negative dim ", d));
    if (d > 0 && layout.elements > std::numeric_limits<int64_t>::max() / 16 / d) {
      return BadTensor(proto, "too many elements");
    }
    layout.elements *= d;
  }
  const int64_t n = layout.elements;
  if (layout.type == DataType::kString) {
    if (proto.string_data_size() != n) {
      return BadTensor(
          proto, absl::StrCat("has ", proto.string_data_size(), " strings, its dims need ", n));
    }
    return layout;
  }
  layout.bytes = StorageBytes(layout.type, n);
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) return layout;  // sized on reading
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != layout.bytes) {
      return BadTensor(proto, absl::StrCat("raw_data has ", proto.raw_data().size(),
                                           " bytes, its dims need ", layout.bytes));
    }
    return layout;
  }
  int64_t values = 0, per_element = 1;
  const bool typed = VisitTypedField(proto, layout.type, [&](const auto& field, auto, int64_t per) {
    values = field.size();
    per_element = per;
  });
  if (!typed) return BadTensor(proto, "unsupported element type");
  if (values != n * per_element) {
    return BadTensor(proto,
                     absl::StrCat("has ", values, " values, its dims need ", n * per_element));
  }
  return layout;
}

// Decodes the typed repeated fields (float_data, int32_data, ...) of a checked layout.
Tensor DecodeTypedFields(const onnx::TensorProto& proto, Layout layout) {
  Tensor t = Tensor::Uninitialized(layout.type, std::move(layout.dims));
  VisitTypedField(proto, t.type(), [&](const auto& field, auto tag, int64_t) {
    using Out = decltype(tag);
    Out* out = static_cast<Out*>(t.raw());
    for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Out>(field.Get(i));
  });
  return t;
}

absl::StatusOr<Tensor> Decode(const onnx::TensorProto& proto, std::string* movable_raw,
                              const std::string& base_dir) {
  OVFIX_ASSIGN_OR_RETURN(Layout layout, CheckedLayout(proto));
  std::vector<int64_t> dims = layout.dims;
  if (layout.type == DataType::kString) {
    return Tensor(std::move(dims), {proto.string_data().begin(), proto.string_data().end()});
  }
  const DataType type = layout.type;
  const size_t bytes = layout.bytes;
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    if (base_dir.empty()) return BadTensor(proto, "external data with no model folder");
    ExternalDataFiles files(base_dir);
    OVFIX_ASSIGN_OR_RETURN(auto buffer, files.Resolve(proto, bytes));
    return Tensor(type, std::move(dims), std::move(buffer));
  }
  if (proto.has_raw_data()) {
    if (movable_raw != nullptr) {
      return Tensor(type, std::move(dims), Buffer::FromString(std::move(*movable_raw)));
    }
    Tensor t(type, std::move(dims));
    if (bytes > 0) std::memcpy(t.raw(), proto.raw_data().data(), bytes);
    return t;
  }
  return DecodeTypedFields(proto, std::move(layout));
}

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto,
                                       const std::string& base_dir) {
  return Decode(proto, nullptr, base_dir);
}

absl::StatusOr<Tensor> TensorFromProtoMove(onnx::TensorProto& proto, const std::string& base_dir) {
  return Decode(proto, proto.has_raw_data() ? proto.mutable_raw_data() : nullptr, base_dir);
}

absl::Status CheckTensorProto(const onnx::TensorProto& proto) {
  return CheckedLayout(proto).status();
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
