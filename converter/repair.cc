#include "converter/repair.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "converter/model_run.h"
#include "exec/compare.h"
#include "exec/random_inputs.h"
#include "ir/graph_walk.h"
#include "ir/status_macros.h"

namespace ovfix::converter {
namespace {

constexpr int kMaxRounds = 6;
// Each round aims below this share of the tolerance, so that the next measurement (on every
// input set, of the bytes written) does not land just above it.
constexpr double kAim = 0.7;

// What a measuring run learnt: each float value's error against fp32, and which values the
// converted model holds as float16 (the run's types: a graph read back from bytes need not
// declare its intermediate values).
struct ValueErrors {
  std::map<std::string, double> error;
  std::set<std::string> float16;
};

ValueErrors Compare(const exec::TensorMap& converted, const exec::TensorMap& fp32) {
  ValueErrors errors;
  for (const auto& [name, t] : converted) {
    if (t.type() == DataType::kFloat16) errors.float16.insert(name);
    if (!IsFloatingPoint(t.type())) continue;
    auto it = fp32.find(name);
    if (it == fp32.end() || it->second.dims() != t.dims()) continue;
    errors.error[name] = exec::RelativeError(t, it->second, exec::kFloat16Resolution);
  }
  return errors;
}

struct AddedError {
  const Node* node;
  double added;  // its output's error minus its inputs' worst
  double error;  // its output's error
};

// The float16 nodes of `g` (Casts aside) and the error each adds. Weights are not inputs
// here: their rounding is part of what the node adds.
std::vector<AddedError> AddedErrors(const Graph& g, const ValueErrors& errors) {
  std::vector<AddedError> added;
  for (const Node* n : g.nodes()) {
    if (n->outputs().empty() || n->output(0) == nullptr) continue;
    if (n->op_type() == "Cast" || n->op_type() == "CastLike") continue;
    if (!errors.float16.contains(n->output(0)->name())) continue;
    auto out = errors.error.find(n->output(0)->name());
    if (out == errors.error.end()) continue;
    double in = 0;
    for (const Value* v : n->inputs()) {
      if (v == nullptr || v->is_initializer()) continue;
      if (auto it = errors.error.find(v->name()); it != errors.error.end()) {
        in = std::max(in, it->second);
      }
    }
    if (out->second > in) added.push_back({n, out->second - in, out->second});
  }
  std::sort(added.begin(), added.end(),
            [](const AddedError& a, const AddedError& b) { return a.added > b.added; });
  return added;
}

// Captures every activation of `model`'s serialized bytes on the first set and compares its
// outputs on every set; `errors` gets each value's error against `fp32_activations`.
absl::StatusOr<EndToEndResult> MeasureRound(const Model& model, ReferenceValidator& reference,
                                            const exec::TensorMap& fp32_activations,
                                            ValueErrors& errors) {
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> bytes, SerializedCopy(model));
  absl::StatusOr<exec::TensorMap> captured =
      CaptureActivations(*bytes, reference.sets()[0], exec::Precision::kFp32);
  reference.count_model_runs(1);
  if (!captured.ok()) return captured.status();
  errors = Compare(*captured, fp32_activations);
  std::vector<Tensor> outputs;
  for (const Value* v : bytes->graph().outputs()) {
    auto it = captured->find(v->name());
    if (it == captured->end()) return absl::InternalError(absl::StrCat("no output ", v->name()));
    outputs.push_back(it->second);
  }
  OVFIX_ASSIGN_OR_RETURN(EndToEndResult worst, reference.Compare(bytes->graph(), outputs, 0));
  for (size_t k = 1; k < reference.sets().size(); ++k) {
    absl::StatusOr<std::vector<Tensor>> out =
        RunAsTyped(*bytes, reference.sets()[k], exec::kValidationSeed);
    reference.count_model_runs(1);
    if (!out.ok()) return out.status();
    OVFIX_ASSIGN_OR_RETURN(EndToEndResult r, reference.Compare(bytes->graph(), *out, k));
    KeepWorst(worst, r);
  }
  return worst;
}

bool HasFloat16Output(const Node& n) {
  for (const Value* v : n.outputs()) {
    if (v != nullptr && v->is_tensor() && v->elem_type() == DataType::kFloat16) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<RepairResult> RepairToTolerance(const Model& fp32, std::unique_ptr<Model> first,
                                               double first_error, ReferenceValidator& reference,
                                               double tolerance, const Reconvert& reconvert,
                                               const std::function<void(const std::string&)>& log) {
  const int runs_before = reference.model_runs();
  RepairResult result;
  result.model = std::move(first);
  absl::StatusOr<exec::TensorMap> fp32_activations =
      CaptureActivations(fp32, reference.sets()[0], exec::Precision::kFp32);
  reference.count_model_runs(1);
  if (!fp32_activations.ok()) return fp32_activations.status();

  std::map<std::string, std::string> keep;
  ValueErrors errors;
  double error = first_error;
  // The first round measures the model that failed (its error is known, its activations
  // are not).
  OVFIX_ASSIGN_OR_RETURN(EndToEndResult measured,
                         MeasureRound(*result.model, reference, *fp32_activations, errors));
  error = std::max(error, measured.score);
  while (true) {
    ++result.rounds;
    const std::vector<AddedError> added = AddedErrors(result.model->graph(), errors);
    const bool everything = result.rounds > kMaxRounds || added.empty();
    if (everything) {
      // Nothing left to single out: every node still in float16 goes to fp32, in bodies too
      // (whose values the captured runs do not see).
      for (const Graph* graph : GraphsRecursive(result.model->graph())) {
        for (const Node* n : graph->nodes()) {
          if (n->outputs().empty() || n->output(0) == nullptr) continue;
          const bool float16 = graph == &result.model->graph()
                                   ? errors.float16.contains(n->output(0)->name())
                                   : HasFloat16Output(*n);
          if (float16) keep.emplace(n->output(0)->name(), "repair: every float node kept");
        }
      }
    } else {
      double total = 0;
      for (const AddedError& a : added) total += a.added;
      const double share = std::clamp(1 - kAim * tolerance / error, 0.3, 0.95);
      // Errors relative to each value's own range do not add up exactly across values, so
      // each round also keeps at least a growing share of the float16 nodes: 2%, 4%, 8%...
      // of them, which bounds the rounds whatever the estimate.
      int float16_nodes = 0;
      for (const Node* n : result.model->graph().nodes()) {
        float16_nodes += !n->outputs().empty() && n->output(0) != nullptr &&
                         errors.float16.contains(n->output(0)->name());
      }
      const size_t at_least = static_cast<size_t>(
          std::ceil(float16_nodes * 0.02 * static_cast<double>(1 << (result.rounds - 1))));
      double covered = 0;
      size_t chosen = 0;
      for (const AddedError& a : added) {
        if (covered >= share * total && chosen >= at_least) break;
        ++chosen;
        covered += a.added;
        const std::string& out = a.node->output(0)->name();
        keep[out] = absl::StrFormat("repair: adds %.3g error (round %d)", a.added, result.rounds);
        result.kept.push_back(
            {a.node->Describe(), a.node->op_type(), out, a.error, 0, result.rounds});
      }
    }
    OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> candidate, reconvert(keep));
    OVFIX_ASSIGN_OR_RETURN(measured,
                           MeasureRound(*candidate, reference, *fp32_activations, errors));
    result.model = std::move(candidate);
    error = measured.score;
    result.end_to_end = measured;
    log(absl::StrFormat("repair round %d: %d node(s) kept in fp32, end-to-end error %.3g",
                        result.rounds, static_cast<int>(keep.size()), error));
    if (error <= tolerance) {
      result.within_tolerance = true;
      break;
    }
    if (everything) break;
  }
  for (RepairedNode& k : result.kept) {
    if (auto it = errors.error.find(k.output); it != errors.error.end()) {
      k.error_after = it->second;
    }
  }
  result.model_runs = reference.model_runs() - runs_before;
  return result;
}

}  // namespace ovfix::converter
