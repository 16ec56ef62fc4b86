// Facts the conversion tests assert on a converted model or its report, counted here
// independently of the converter's own counting: which nodes compute in fp32, which in a
// 16-bit float, whether element-wise inputs have equal ranks (TensorRT's legal form), and how
// many rewrites a rule committed.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model.h"
#include "rules/conversion_options.h"

namespace ovfix::test_support {

// A fresh folder for one test's files: TMP/ovfix_PREFIX_PID_NAME (the pid keeps parallel ctest
// runs apart).
inline std::filesystem::path ScratchDir(std::string_view prefix, std::string_view name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      absl::StrCat("ovfix_", std::string(prefix), "_", ::getpid(), "_", std::string(name));
  std::filesystem::create_directories(dir);
  return dir;
}

// Rewrites of `rule` committed (not rolled back) in the conversion.
inline int CommittedRewrites(const converter::ConversionReport& report, std::string_view rule) {
  int n = 0;
  for (const rules::RewriteRecord& r : report.rewrites) n += r.rule == rule && !r.rolled_back;
  return n;
}

// The main graph's nodes that compute in fp32: a float32 output and no 16-bit float one
// (Casts and Constants aside), by name.
inline std::set<std::string> Fp32NodeNames(const Model& m) {
  std::set<std::string> names;
  for (const Node* n : m.graph().nodes()) {
    if (n->op_type() == "Cast" || n->op_type() == "Constant") continue;
    bool single = false, half = false;
    for (const Value* o : n->outputs()) {
      if (o == nullptr || !o->is_tensor()) continue;
      single = single || o->elem_type() == DataType::kFloat;
      half = half || o->elem_type() == DataType::kBfloat16 || o->elem_type() == DataType::kFloat16;
    }
    if (single && !half) names.insert(n->name());
  }
  return names;
}

// Over every graph of a written model (bodies too).
struct WrittenPrecision {
  int elementwise = 0;     // element-wise nodes, each checked to read inputs of its rank
  int half_values = 0;     // nodes with an output of the 16-bit type
  int fp32_computing = 0;  // nodes other than Cast with float32 outputs and no 16-bit one
  int casts_to_float = 0;  // Casts to float32
};

// Counts them, and EXPECTs every element-wise node's inputs to have its output's rank.
inline WrittenPrecision CountWrittenPrecision(Model& m, DataType half) {
  static const std::set<std::string> kElementwise = {
      "Add",   "Sub",   "Mul",  "Div",         "Pow",     "Mod",
      "Where", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
      "And",   "Or",    "Xor",  "Max",         "Min",     "Sum",
      "Mean",  "PRelu"};
  WrittenPrecision w;
  for (Graph* g : GraphsRecursive(m.graph())) {
    for (const Node* n : g->nodes()) {
      bool single = false, halved = false;
      for (const Value* v : n->outputs()) {
        if (v == nullptr || !v->is_tensor()) continue;
        halved = halved || v->elem_type() == half;
        single = single || v->elem_type() == DataType::kFloat;
      }
      w.half_values += halved;
      if (n->op_type() == "Cast") {
        w.casts_to_float += n->GetInt("to", 0) == static_cast<int64_t>(DataType::kFloat);
      } else if (single && !halved) {
        ++w.fp32_computing;
      }
      if (!kElementwise.contains(n->op_type())) continue;
      ++w.elementwise;
      const int rank = n->output(0)->rank();
      EXPECT_GE(rank, 0) << n->Describe();
      for (const Value* in : n->inputs()) {
        if (in != nullptr) {
          EXPECT_EQ(in->rank(), rank) << n->Describe() << " input " << in->name();
        }
      }
    }
  }
  return w;
}

// `convert INPUT OUTPUT --target tensorrt --precision PRECISION --calibration-data DATA` as
// the pipeline's options: fp32 inputs and outputs (Casts inside, the default), as TensorRT
// users feed them, and the file written.
inline converter::PipelineOptions TensorRtConversion(const std::string& input,
                                                     const std::string& output,
                                                     const std::string& data,
                                                     const std::string& precision) {
  converter::PipelineOptions options;
  options.input_path = input;
  options.output_path = output;
  options.write_output = true;
  options.calibration_data = {data};
  options.convert.target = "tensorrt";
  EXPECT_TRUE(rules::SetOption("precision", precision, options.convert).ok()) << precision;
  options.set_by_user = {"precision"};
  return options;
}

}  // namespace ovfix::test_support
