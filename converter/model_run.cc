#include "converter/model_run.h"

#include "absl/strings/str_cat.h"
#include "converter/conversion_time.h"
#include "converter/session_graph.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/status_macros.h"

namespace ovfix::converter {

exec::TensorMap MatchInputTypes(const Graph& g, const exec::TensorMap& given,
                                std::vector<std::string>* notes) {
  exec::TensorMap out = given;
  for (const Value* v : g.inputs()) {
    auto it = out.find(v->name());
    if (it == out.end() || !v->is_tensor()) continue;
    const DataType want = v->elem_type();
    const DataType have = it->second.type();
    if (want == have || !IsFloatingPoint(want) || !IsFloatingPoint(have)) continue;
    it->second = ConvertTensor(it->second, want);
    if (notes != nullptr) {
      notes->push_back(absl::StrCat("input '", v->name(), "': ", std::string(DataTypeName(have)),
                                    " data converted to ", std::string(DataTypeName(want)),
                                    ", the type the model declares"));
    }
  }
  return out;
}

absl::StatusOr<std::vector<Tensor>> RunAsTyped(const Model& model, const exec::TensorMap& feeds,
                                               uint64_t random_seed, bool as_written) {
  exec::SessionOptions options;
  options.random_seed = random_seed;
  // Without QDQ fusion: the reference it is compared with captures every value, which runs
  // the graph's quantization steps as written (a fused QLinearConv may land one step away).
  options.fuse_qdq = false;
  options.runs_once = true;
  ScopedModelRun timed;
  const exec::TensorMap typed = MatchInputTypes(model.graph(), feeds);
  absl::StatusOr<RunSession> run = [&] {
    ScopedTimePart building(TimePart::kSessionBuilds);
    return CreateRunSession(model, typed, options, as_written);
  }();
  if (!run.ok()) return run.status();
  return run->session->Run(typed);
}

absl::StatusOr<std::vector<Tensor>> RunEveryFloatInFp16(const Model& model,
                                                        const exec::TensorMap& feeds,
                                                        uint64_t random_seed) {
  exec::SessionOptions options;
  options.random_seed = random_seed;
  options.precision = exec::Precision::kFp16Storage;
  options.islands_ignored = true;
  options.runs_once = true;
  ScopedModelRun timed;
  absl::StatusOr<std::unique_ptr<exec::Session>> session = [&] {
    ScopedTimePart building(TimePart::kSessionBuilds);
    return exec::CreateSession(model, options);
  }();
  if (!session.ok()) return session.status();
  return (*session)->Run(MatchInputTypes(model.graph(), feeds));
}

absl::StatusOr<std::unique_ptr<Model>> SerializedCopy(const Model& model) {
  // The copy shares the buffers of its large weights (their bytes are what a save writes), so
  // that a conversion's anonymous memory does not grow with the copies it holds at once (the
  // graph before the precision step, the repair's failed and candidate conversions, and the
  // bytes each is measured on): with 43 MB of inline weights they were 170 MB more.
  constexpr size_t kSharedTensorBytes = size_t{1} << 20;
  ScopedTimePart timed(TimePart::kCopies);
  return CopyModel(model, kSharedTensorBytes);
}

absl::StatusOr<std::unique_ptr<Model>> SerializedGraphCopy(const Model& model) {
  ScopedTimePart timed(TimePart::kCopies);
  return CopyGraphSharingWeights(model);
}

}  // namespace ovfix::converter
