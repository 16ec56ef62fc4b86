#include "ir/value.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/type_proto_dims.h"

namespace ovfix {

DataType Value::elem_type() const {
  if (!type_.has_tensor_type()) return DataType::kUndefined;
  return static_cast<DataType>(type_.tensor_type().elem_type());
}

void Value::set_elem_type(DataType type) {
  type_.mutable_tensor_type()->set_elem_type(static_cast<int32_t>(type));
}

std::vector<Dim> DimsFromTypeProto(const onnx::TypeProto& type) {
  std::vector<Dim> dims;
  for (const auto& d : type.tensor_type().shape().dim()) {
    Dim dim;
    if (d.has_dim_value()) dim.value = d.dim_value();
    if (d.has_dim_param()) dim.symbol = d.dim_param();
    dims.push_back(std::move(dim));
  }
  return dims;
}

std::optional<std::vector<Dim>> Value::shape() const {
  if (!type_.has_tensor_type() || !type_.tensor_type().has_shape()) return std::nullopt;
  return DimsFromTypeProto(type_);
}

int Value::rank() const {
  if (!type_.has_tensor_type() || !type_.tensor_type().has_shape()) return -1;
  return type_.tensor_type().shape().dim_size();
}

void Value::set_shape(const std::vector<Dim>& dims) { SetTypeProtoDims(dims, type_); }

void Value::set_shape(const std::vector<int64_t>& dims) {
  auto* shape = type_.mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

std::optional<std::vector<int64_t>> Value::static_shape() const {
  if (initializer_) return initializer_->dims();
  auto dims = shape();
  if (!dims) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& d : *dims) {
    if (!d.known()) return std::nullopt;
    out.push_back(d.value);
  }
  return out;
}

void Value::set_tensor(Tensor t) {
  set_elem_type(t.type());
  set_shape(t.dims());
  initializer_ = std::move(t);
  // The file's form no longer describes it: a new tensor can sit at the address the file's
  // bytes had (reused memory, or the same buffer written anew), and the writer would then
  // write the values read from the file (typed fields) instead of its bytes.
  source_proto_.reset();
  source_bytes_ = nullptr;
}

std::string DescribeType(const Value& v) {
  if (!v.is_tensor()) {
    if (v.type().has_sequence_type()) return "sequence";
    if (v.type().has_optional_type()) return "optional";
    if (v.type().has_map_type()) return "map";
    return "?";
  }
  std::string out(DataTypeName(v.elem_type()));
  auto dims = v.shape();
  if (!dims) return out;
  std::vector<std::string> parts;
  for (const Dim& d : *dims) {
    parts.push_back(d.known() ? absl::StrCat(d.value) : (d.symbol.empty() ? "?" : d.symbol));
  }
  return absl::StrCat(out, "[", absl::StrJoin(parts, ","), "]");
}

void SetTypeProtoDims(const std::vector<Dim>& dims, onnx::TypeProto& type) {
  auto* shape = type.mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (const Dim& d : dims) {
    auto* out = shape->add_dim();
    if (d.known()) {
      out->set_dim_value(d.value);
    } else if (!d.symbol.empty()) {
      out->set_dim_param(d.symbol);
    }
  }
}

}  // namespace ovfix
