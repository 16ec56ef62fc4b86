// Long chains and wide nodes convert to the right structure and compute what the original
// computes, at sizes that take well under a second. How the time grows with the size is
// measured by bench/chain_bench.cc (20k and 200k chains, a Sum of 10^6 inputs).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "converter/pipeline.h"
#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/model.h"

namespace ovfix::converter {
namespace {

std::unique_ptr<Model> NewModel(Value*& x) {
  auto m = std::make_unique<Model>();
  m->extras().set_ir_version(8);
  m->SetOpsetVersion("", 17);
  Graph& g = m->graph();
  g.set_name("g");
  x = g.CreateValue("x");
  x->set_elem_type(DataType::kFloat);
  x->set_shape(std::vector<int64_t>{2, 3});
  g.AddInput(x);
  return m;
}

void SetOutput(Graph& g, Value* y) {
  y->set_elem_type(DataType::kFloat);
  y->set_shape(std::vector<int64_t>{2, 3});
  g.AddOutput(y);
}

Tensor Constant(std::vector<int64_t> dims, std::vector<float> values) {
  return Tensor::FromVector<float>(DataType::kFloat, std::move(dims), std::move(values));
}

std::vector<float> Outputs(const Model& model, const std::vector<float>& x) {
  auto session = exec::CreateSession(model, {});
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  exec::TensorMap feeds;
  const DataType declared = model.graph().inputs()[0]->elem_type();  // float16 after fp16
  feeds["x"] = ConvertTensor(Constant({2, 3}, x), declared);
  auto out = (*session)->Run(feeds);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  Tensor y =
      (*out)[0].type() == DataType::kFloat ? (*out)[0] : ConvertTensor((*out)[0], DataType::kFloat);
  std::vector<float> values;
  for (int64_t i = 0; i < y.numel(); ++i) values.push_back(static_cast<float>(y.GetAsDouble(i)));
  return values;
}

ConversionReport Convert(Model& model, const std::string& target) {
  PipelineOptions options;
  options.convert.target = target;
  options.convert.validate = false;
  auto report = ConvertModel(model, options);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : ConversionReport{};
}

// y = (((x + c) + c) + ...) with x [2, 3] and every c a rank-1 constant [3]: one rewrite
// per node, each enabling nothing new (the worklist driver visits each node a bounded
// number of times).
TEST(GraphSize, LongAddChainGetsEveryBroadcastMadeExplicit) {
  constexpr int kLength = 1000;
  for (const std::string target : {"tensorrt", "gpu-fp16"}) {
    Value* v = nullptr;
    auto model = NewModel(v);
    Graph& g = model->graph();
    for (int i = 0; i < kLength; ++i) {
      Value* c = g.AddInitializer(absl::StrCat("c", i), Constant({3}, {0.5, 0.25, 0.125}));
      v = g.AddNode("Add", {v, c}, {absl::StrCat("t", i)})->output(0);
    }
    SetOutput(g, v);
    const ConversionReport report = Convert(*model, target);
    int adds = 0;
    for (const Node* n : model->graph().nodes()) {
      if (n->op_type() != "Add") continue;
      ++adds;
      for (const Value* in : n->inputs())
        EXPECT_EQ(in->rank(), 2) << target << " " << n->Describe();
    }
    EXPECT_EQ(adds, kLength) << target;
    int rewrites = 0;
    for (const auto& r : report.rewrites) rewrites += !r.rolled_back;
    EXPECT_GE(rewrites, kLength) << target;
    const std::vector<float> y = Outputs(*model, {0, 0, 0, 1, 1, 1});
    // Exact in fp16 too: every partial sum is a multiple of the spacing at its magnitude.
    EXPECT_EQ(y, (std::vector<float>{500, 250, 125, 501, 251, 126})) << target;
  }
}

// One Sum of many [2, 3] inputs among which one rank-1 constant far from the front: the
// matcher tries every position for the broadcast operand, and the others keep their order.
TEST(GraphSize, WideSumGetsItsOneBroadcastMadeExplicit) {
  constexpr int kInputs = 5000, kNarrow = 600;
  Value* x = nullptr;
  auto model = NewModel(x);
  Graph& g = model->graph();
  std::vector<Value*> inputs = {x};
  for (int i = 1; i < kInputs; ++i) {
    inputs.push_back(i == kNarrow ? g.AddInitializer("narrow", Constant({3}, {1, 2, 3}))
                                  : g.AddInitializer(absl::StrCat("c", i),
                                                     Constant({2, 3}, {0, 0, 0, 0, 0, 1})));
  }
  SetOutput(g, g.AddNode("Sum", inputs, {"y"})->output(0));
  Convert(*model, "tensorrt");
  const Node* sum = nullptr;
  for (const Node* n : model->graph().nodes()) {
    if (n->op_type() == "Sum") sum = n;
  }
  ASSERT_NE(sum, nullptr);
  ASSERT_EQ(sum->num_inputs(), static_cast<size_t>(kInputs));
  for (size_t i = 0; i < sum->num_inputs(); ++i) {
    EXPECT_EQ(sum->input(i)->rank(), 2) << i;
    if (i > 0 && static_cast<int>(i) != kNarrow) {
      EXPECT_EQ(sum->input(i)->name(), absl::StrCat("c", i));
    }
  }
  const std::vector<float> y = Outputs(*model, {1, 1, 1, 1, 1, 1});
  EXPECT_EQ(y, (std::vector<float>{2, 3, 4, 2, 3, 4 + kInputs - 2}));
}

}  // namespace
}  // namespace ovfix::converter
