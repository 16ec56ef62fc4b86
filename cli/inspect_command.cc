// `ovfix inspect MODEL [--json]`: what a model is made of.
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "converter/json_writer.h"
#include "ir/model_io.h"

namespace ovfix::cli {
namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
};

struct Summary {
  std::map<std::string, int> ops;  // by "domain.op" / "op"
  int64_t initializers = 0;
  int64_t initializer_bytes = 0;
  int subgraphs = 0;
  std::set<std::string> symbols;
};

void Summarize(const Graph& g, Summary& s) {
  for (const Value* v : g.initializers()) {
    ++s.initializers;
    s.initializer_bytes += v->tensor().nbytes();
  }
  for (Node* n : g.nodes()) {
    const std::string key = n->domain().empty() || n->domain() == "ai.onnx"
                                ? n->op_type()
                                : absl::StrCat(n->domain(), ".", n->op_type());
    ++s.ops[key];
    for (const auto& sub : n->subgraphs()) {
      ++s.subgraphs;
      Summarize(*sub.graph, s);
    }
  }
}

void CollectSymbols(const Value* v, Summary& s, std::vector<std::string>& dynamic) {
  auto dims = v->shape();
  if (!dims) return;
  for (size_t i = 0; i < dims->size(); ++i) {
    const Dim& d = (*dims)[i];
    if (d.known()) continue;
    if (!d.symbol.empty()) s.symbols.insert(d.symbol);
    dynamic.push_back(absl::StrCat(v->name(), "[", i, "]", d.symbol.empty() ? "" : "=", d.symbol));
  }
}

int RunInspect(const InspectOptions& o) {
  auto loaded = LoadModel(o.model);
  if (!loaded.ok()) return BadInput("inspect", loaded.status().message(), {o.model});
  const Model& model = **loaded;
  const Graph& g = model.graph();
  Summary s;
  Summarize(g, s);
  std::vector<std::string> dynamic;
  std::vector<const Value*> inputs;
  for (const Value* v : g.inputs()) {
    if (!v->is_initializer()) inputs.push_back(v);
  }
  for (const Value* v : inputs) CollectSymbols(v, s, dynamic);
  for (const Value* v : g.outputs()) CollectSymbols(v, s, dynamic);

  if (o.json) {
    JsonWriter j;
    j.BeginObject();
    j.Key("model").String(o.model);
    j.Key("ir_version").Int(model.extras().ir_version());
    j.Key("producer")
        .String(
            absl::StrCat(model.extras().producer_name(), " ", model.extras().producer_version()));
    j.Key("opset_import").BeginObject();
    for (const auto& op : model.extras().opset_import()) {
      j.Key(op.domain().empty() ? "ai.onnx" : op.domain()).Int(op.version());
    }
    j.EndObject();
    auto values = [&](const char* key, const std::vector<const Value*>& vs) {
      j.Key(key).BeginArray();
      for (const Value* v : vs) {
        j.BeginObject();
        j.Key("name").String(v->name());
        j.Key("type").String(DescribeType(*v));
        j.EndObject();
      }
      j.EndArray();
    };
    values("inputs", inputs);
    values("outputs", {g.outputs().begin(), g.outputs().end()});
    j.Key("nodes").Int(static_cast<int64_t>(g.CountNodesRecursive()));
    j.Key("ops").BeginObject();
    for (const auto& [op, n] : s.ops) j.Key(op).Int(n);
    j.EndObject();
    j.Key("initializers").Int(s.initializers);
    j.Key("initializer_bytes").Int(s.initializer_bytes);
    j.Key("dynamic_dims").BeginArray();
    for (const auto& d : dynamic) j.String(d);
    j.EndArray();
    j.Key("symbols").BeginArray();
    for (const auto& d : s.symbols) j.String(d);
    j.EndArray();
    j.Key("subgraphs").Int(s.subgraphs);
    j.EndObject();
    std::printf("%s\n", j.str().c_str());
    return kExitOk;
  }

  std::printf("model      %s\n", o.model.c_str());
  std::printf("ir_version %lld   producer %s %s\n",
              static_cast<long long>(model.extras().ir_version()),
              model.extras().producer_name().c_str(), model.extras().producer_version().c_str());
  std::vector<std::string> opsets;
  for (const auto& op : model.extras().opset_import()) {
    opsets.push_back(
        absl::StrCat(op.domain().empty() ? "ai.onnx" : op.domain(), " ", op.version()));
  }
  std::printf("opsets     %s\n", absl::StrJoin(opsets, ", ").c_str());
  std::printf("inputs\n");
  for (const Value* v : inputs)
    std::printf("  %-32s %s\n", v->name().c_str(), DescribeType(*v).c_str());
  std::printf("outputs\n");
  for (const Value* v : g.outputs()) {
    std::printf("  %-32s %s\n", v->name().c_str(), DescribeType(*v).c_str());
  }
  std::printf("nodes      %zu", g.CountNodesRecursive());
  if (s.subgraphs > 0) std::printf(" (%d subgraphs)", s.subgraphs);
  std::printf("\n");
  for (const auto& [op, n] : s.ops) std::printf("  %-24s %d\n", op.c_str(), n);
  std::printf("initializers %lld (%lld bytes)\n", static_cast<long long>(s.initializers),
              static_cast<long long>(s.initializer_bytes));
  std::printf("dynamic dims %s\n", dynamic.empty() ? "none" : absl::StrJoin(dynamic, ", ").c_str());
  return kExitOk;
}

}  // namespace

Command AddInspectCommand(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  auto* sub = app.add_subcommand("inspect", "Show a model's opsets, inputs/outputs, ops, weights");
  sub->add_option("model", options->model, "The .onnx model")->required();
  sub->add_flag("--json", options->json, "Print JSON instead of a table");
  return {sub, [options] { return RunInspect(*options); },
          [options] { return std::vector<std::string>{options->model}; }};
}

}  // namespace ovfix::cli
