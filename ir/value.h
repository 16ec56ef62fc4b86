// Value: a named tensor (or sequence/optional) flowing between nodes. Knows its producer,
// its uses, its type (an onnx TypeProto: element type and dims, each a number or a symbol)
// and, for initializers, its constant Tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace ovfix {

class Graph;
class Node;

struct Use {
  Node* node;
  int input_index;
  bool operator==(const Use&) const = default;
};

// One dim of a shape: a number (value >= 0), a symbol, or unknown (value < 0, no symbol).
struct Dim {
  int64_t value = -1;
  std::string symbol;
  bool known() const { return value >= 0; }
  bool operator==(const Dim&) const = default;
};

class Value {
 public:
  const std::string& name() const { return name_; }
  Graph* owner() const { return owner_; }
  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  const std::vector<Use>& uses() const { return uses_; }
  bool has_uses() const { return !uses_.empty(); }

  // Type. For initializers it follows the tensor.
  const onnx::TypeProto& type() const { return type_; }
  onnx::TypeProto* mutable_type() { return &type_; }
  bool is_tensor() const { return type_.has_tensor_type(); }
  DataType elem_type() const;
  void set_elem_type(DataType type);
  // Shape as known: nullopt when the rank is unknown.
  std::optional<std::vector<Dim>> shape() const;
  int rank() const;  // -1 when unknown
  void set_shape(const std::vector<Dim>& dims);
  void set_shape(const std::vector<int64_t>& dims);
  // All dims known numbers.
  std::optional<std::vector<int64_t>> static_shape() const;
  const std::string& doc_string() const { return doc_string_; }
  void set_doc_string(std::string s) { doc_string_ = std::move(s); }

  // Constant data (initializers).
  bool is_initializer() const { return initializer_.has_value(); }
  const Tensor& tensor() const { return *initializer_; }
  void set_tensor(Tensor t);  // makes this an initializer; type follows

  bool is_graph_input() const { return graph_input_; }
  bool is_graph_output() const { return graph_output_count_ > 0; }

 private:
  friend class Graph;
  friend class Node;
  friend class ModelIO;
  Value(Graph* owner, std::string name) : owner_(owner), name_(std::move(name)) {}

  Graph* owner_;
  std::string name_;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  std::vector<Use> uses_;
  onnx::TypeProto type_;
  std::string doc_string_;
  std::optional<Tensor> initializer_;
  // The initializer as read from the file, with its bytes moved into the tensor. Saving an
  // unchanged initializer writes this back (typed fields, doc string, segment kept as read).
  std::shared_ptr<onnx::TensorProto> source_proto_;
  const void* source_bytes_ = nullptr;
  bool graph_input_ = false;
  int graph_output_count_ = 0;
};

// "float[N,3,224,224]"; "?" for unknown dims, "float[?]" ... "float" for unknown rank.
std::string DescribeType(const Value& v);
std::vector<Dim> DimsFromTypeProto(const onnx::TypeProto& type);

}  // namespace ovfix
