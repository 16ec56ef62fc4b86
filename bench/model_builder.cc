#include "bench/model_builder.h"

#include <cmath>
#include <cstring>

namespace ovfix::bench {

ModelBuilder::ModelBuilder(int opset, uint32_t seed) : random_(seed) {
  model_.set_ir_version(8);
  model_.set_producer_name("ovfix_bench");
  onnx::OperatorSetIdProto* import = model_.add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  graph_ = model_.mutable_graph();
  graph_->set_name("generated");
}

std::string ModelBuilder::Fresh(const std::string& prefix) {
  return prefix + "_" + std::to_string(next_++);
}

std::string ModelBuilder::Input(const std::string& name, const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto* v = graph_->add_input();
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  return name;
}

void ModelBuilder::Output(const std::string& value) {
  onnx::ValueInfoProto* v = graph_->add_output();
  v->set_name(value);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
}

std::string ModelBuilder::Weight(const std::vector<int64_t>& dims, float scale) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(Fresh("w"));
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::string bytes(static_cast<size_t>(n) * sizeof(float), '\0');
  float* values = reinterpret_cast<float*>(bytes.data());
  for (int64_t i = 0; i < n; ++i) values[i] = uniform(random_);
  t->set_raw_data(std::move(bytes));
  return t->name();
}

std::string ModelBuilder::Literal(std::string name) {
  if (!constants_as_nodes_) return name;
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type("Constant");
  node->set_name(Fresh("Constant"));
  node->add_output(name);
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->Swap(graph_->mutable_initializer(graph_->initializer_size() - 1));
  a->mutable_t()->clear_name();
  graph_->mutable_initializer()->RemoveLast();
  return name;
}

std::string ModelBuilder::Fill(const std::vector<int64_t>& dims, float value) {
  const std::string name = Weight(dims, 0.0f);
  onnx::TensorProto* t = graph_->mutable_initializer(graph_->initializer_size() - 1);
  float* values = reinterpret_cast<float*>(t->mutable_raw_data()->data());
  for (size_t i = 0; i < t->raw_data().size() / sizeof(float); ++i) values[i] = value;
  return dims.empty() ? Literal(name) : name;
}

std::string ModelBuilder::Floats(const std::vector<float>& values) {
  const std::string name = Weight({static_cast<int64_t>(values.size())}, 0.0f);
  onnx::TensorProto* t = graph_->mutable_initializer(graph_->initializer_size() - 1);
  std::memcpy(t->mutable_raw_data()->data(), values.data(), values.size() * sizeof(float));
  return name;
}

std::string ModelBuilder::Int64s(const std::vector<int64_t>& values) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(Fresh("i"));
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
  return Literal(t->name());
}

std::string ModelBuilder::Integers(int type, const std::vector<int64_t>& dims,
                                   const std::vector<int32_t>& values) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(Fresh("q"));
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  std::string bytes;
  if (type == onnx::TensorProto::INT32) {
    bytes.resize(values.size() * sizeof(int32_t));
    std::memcpy(bytes.data(), values.data(), bytes.size());
  } else {
    for (int32_t v : values) bytes.push_back(static_cast<char>(static_cast<uint8_t>(v)));
  }
  t->set_raw_data(std::move(bytes));
  return t->name();
}

std::vector<float> ModelBuilder::RandomValues(int64_t count, float scale) {
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = uniform(random_);
  return values;
}

std::string ModelBuilder::Int64Scalar(int64_t value) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(Fresh("i"));
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_int64_data(value);
  return Literal(t->name());
}

std::string ModelBuilder::Op(const std::string& op_type, const std::vector<std::string>& inputs,
                             const std::vector<Attr>& attrs) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(op_type);
  node->set_name(Fresh(op_type));
  for (const std::string& in : inputs) node->add_input(in);
  const std::string out = Fresh("t");
  node->add_output(out);
  for (const Attr& a : attrs) {
    onnx::AttributeProto* p = node->add_attribute();
    p->set_name(a.name);
    switch (a.kind) {
      case Attr::kInt:
        p->set_type(onnx::AttributeProto::INT);
        p->set_i(a.i);
        break;
      case Attr::kFloat:
        p->set_type(onnx::AttributeProto::FLOAT);
        p->set_f(a.f);
        break;
      case Attr::kInts:
        p->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : a.ints) p->add_ints(v);
        break;
      case Attr::kString:
        p->set_type(onnx::AttributeProto::STRING);
        p->set_s(a.s);
        break;
    }
  }
  return out;
}

std::vector<std::string> ModelBuilder::OpWithOutputs(const std::string& op_type,
                                                     const std::vector<std::string>& inputs,
                                                     int outputs, const std::vector<Attr>& attrs) {
  std::vector<std::string> names = {Op(op_type, inputs, attrs)};
  onnx::NodeProto* node = graph_->mutable_node(graph_->node_size() - 1);
  while (static_cast<int>(names.size()) < outputs) {
    names.push_back(Fresh("t"));
    node->add_output(names.back());
  }
  return names;
}

std::string ModelBuilder::ProducerType(const std::string& value) const {
  for (const onnx::NodeProto& node : graph_->node()) {
    for (const std::string& out : node.output()) {
      if (out == value) return node.op_type();
    }
  }
  return "";
}

std::string ModelBuilder::Conv(const std::string& x, int64_t in_channels, int64_t out_channels,
                               int64_t kernel, int64_t stride, int64_t group) {
  const int64_t fan_in = in_channels / group * kernel * kernel;
  const std::string w =
      Weight({out_channels, in_channels / group, kernel, kernel}, std::sqrt(3.0f / fan_in));
  const std::string b = Weight({out_channels}, 0.05f);
  const int64_t pad = kernel % 2 == 1 ? kernel / 2 : 0;
  return Op("Conv", {x, w, b},
            {Ints("dilations", {1, 1}), Int("group", group), Ints("kernel_shape", {kernel, kernel}),
             Ints("pads", {pad, pad, pad, pad}), Ints("strides", {stride, stride})});
}

}  // namespace ovfix::bench
