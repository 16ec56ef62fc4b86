#include "ir/node.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/tensor_proto.h"
#include "ir/value.h"

namespace ovfix {

Node::~Node() = default;

std::string Node::Describe() const {
  std::string op =
      domain_.empty() || domain_ == "ai.onnx" ? op_type_ : absl::StrCat(domain_, ".", op_type_);
  if (!name_.empty()) return absl::StrCat(op, " '", name_, "'");
  if (!outputs_.empty() && outputs_[0] != nullptr) {
    return absl::StrCat(op, " (output '", outputs_[0]->name(), "')");
  }
  return op;
}

void Node::ReplaceInput(size_t i, Value* v) {
  Value* old = inputs_[i];
  if (old == v) return;
  if (old != nullptr) {
    auto& uses = old->uses_;
    auto it = std::find(uses.begin(), uses.end(), Use{this, static_cast<int>(i)});
    if (it != uses.end()) uses.erase(it);
  }
  inputs_[i] = v;
  if (v != nullptr) v->uses_.push_back(Use{this, static_cast<int>(i)});
}

void Node::AddInput(Value* v) {
  inputs_.push_back(v);
  if (v != nullptr) v->uses_.push_back(Use{this, static_cast<int>(inputs_.size() - 1)});
}

const onnx::AttributeProto* Node::FindAttribute(std::string_view name) const {
  for (const auto& a : attributes_) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t Node::GetInt(std::string_view name, int64_t fallback) const {
  const auto* a = FindAttribute(name);
  return a != nullptr ? a->i() : fallback;
}

float Node::GetFloat(std::string_view name, float fallback) const {
  const auto* a = FindAttribute(name);
  return a != nullptr ? a->f() : fallback;
}

std::string Node::GetString(std::string_view name, std::string fallback) const {
  const auto* a = FindAttribute(name);
  return a != nullptr ? a->s() : fallback;
}

std::vector<int64_t> Node::GetInts(std::string_view name, std::vector<int64_t> fallback) const {
  const auto* a = FindAttribute(name);
  if (a == nullptr) return fallback;
  return {a->ints().begin(), a->ints().end()};
}

std::vector<float> Node::GetFloats(std::string_view name, std::vector<float> fallback) const {
  const auto* a = FindAttribute(name);
  if (a == nullptr) return fallback;
  return {a->floats().begin(), a->floats().end()};
}

std::vector<std::string> Node::GetStrings(std::string_view name) const {
  const auto* a = FindAttribute(name);
  if (a == nullptr) return {};
  return {a->strings().begin(), a->strings().end()};
}

absl::StatusOr<Tensor> Node::GetTensor(std::string_view name) const {
  const auto* a = FindAttribute(name);
  if (a == nullptr || !a->has_t()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(), ": missing tensor attribute '", std::string(name), "'"));
  }
  return TensorFromProto(a->t());
}

void Node::SetAttribute(onnx::AttributeProto attribute) {
  for (auto& a : attributes_) {
    if (a.name() == attribute.name()) {
      a = std::move(attribute);
      return;
    }
  }
  attributes_.push_back(std::move(attribute));
}

void Node::RemoveAttribute(std::string_view name) {
  std::erase_if(attributes_, [&](const onnx::AttributeProto& a) { return a.name() == name; });
}

Graph* Node::GetSubgraph(std::string_view attribute) const {
  for (const auto& s : subgraphs_) {
    if (s.attribute == attribute && s.index < 0) return s.graph.get();
  }
  return nullptr;
}

}  // namespace ovfix
