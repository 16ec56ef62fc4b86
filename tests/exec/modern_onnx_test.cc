// ONNX IR 10-13 / opsets 18-26 against onnxruntime (the models of tests/data/modern, written by
// tests/data/modern/generate.py; see its README.md):
//
//   ModernOnnx.NodeCases       every nodes/<case>: one op new in opsets 18-26 at its own opset
//   ModernOnnx.ModelClasses    every models/<case>: model classes as current exporters write them
//   ModernOnnx.ConvertedModelsRunInOnnxruntime
//                              `ovfix convert` of every models/<case> for gpu-fp16, tensorrt and
//                              openvino-gpu --batch 1; onnxruntime must load and run each written
//                              model, with outputs close to the original's
//
// Each case runs on ovfix's cpu session and in onnxruntime 1.30 (graph as written, no
// optimizations; all cases of a test in one node process, tests/support/ort_batch.js) on the
// case's input_K.pb. Outputs match when the element types and shapes are equal and
//   integer and bool outputs: every element equal;
//   float outputs: NaN where onnxruntime has NaN, the same infinities, and
//                  max |ovfix - ort| <= 1e-4 * max(1, max |ort|) over the finite elements
// (1e-4 of the reference's magnitude: well above float32 rounding of these small ops, well
// below any real kernel error). A converted model's outputs are judged against onnxruntime's
// outputs of the original: relative error (exec/compare.h RelativeError, at float16
// resolution) <= 0.05 for float outputs, integer outputs exact.
//
// Cases listed in tests/data/modern/known_failures.txt ("nodes/<case> reason",
// "models/<case> reason" or "convert/<case>/<target> reason") are expected to fail; the tests
// fail on any other failure and on a listed case that now passes (remove it from the list).
// A summary line per opset and every failure with ovfix's error go to stdout.
//
// Without node/onnxruntime-node the tests skip (fail under $OVFIX_REQUIRE_ORT, as
// tests/support/ort_peer.h does). OVFIX_MODERN_FILTER=substring runs the cases whose name
// contains it (the expected-failure check then covers those only).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "exec/compare.h"
#include "exec/cpu_session.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "onnx/onnx_pb.h"
#include "tests/cli/cli_util.h"
#include "tests/support/ort_peer.h"

namespace ovfix::exec {
namespace {

namespace fs = std::filesystem;

const char kRoot[] = OVFIX_SOURCE_DIR "/tests/data/modern";
const char kKnownFailures[] = OVFIX_SOURCE_DIR "/tests/data/modern/known_failures.txt";

struct Case {
  std::string id;  // "nodes/<name>" or "models/<name>"
  fs::path dir;
  int64_t opset = -1;
  std::vector<std::string> inputs;  // input_K.pb in order
};

// The default-domain opset of a model file, read from the proto itself (so that a model
// ovfix cannot load still gets its line in the summary).
int64_t ReadOpset(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  onnx::ModelProto proto;
  if (!in || !proto.ParseFromIstream(&in)) return -1;
  for (const onnx::OperatorSetIdProto& o : proto.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  }
  return -1;
}

std::vector<Case> Cases(const std::string& kind) {
  std::vector<Case> cases;
  const fs::path base = fs::path(kRoot) / kind;
  if (!fs::exists(base)) return cases;
  const char* filter = std::getenv("OVFIX_MODERN_FILTER");
  for (const fs::directory_entry& e : fs::directory_iterator(base)) {
    if (!e.is_directory() || !fs::exists(e.path() / "model.onnx")) continue;
    Case c;
    c.id = kind + "/" + e.path().filename().string();
    if (filter != nullptr && !absl::StrContains(c.id, filter)) continue;
    c.dir = e.path();
    c.opset = ReadOpset(e.path() / "model.onnx");
    for (int k = 0;; ++k) {
      const fs::path in = e.path() / absl::StrCat("input_", k, ".pb");
      if (!fs::exists(in)) break;
      c.inputs.push_back(in.string());
    }
    cases.push_back(std::move(c));
  }
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) { return a.id < b.id; });
  return cases;
}

// known_failures.txt: "<id> <reason>" per line; '#' starts a comment.
std::map<std::string, std::string> KnownFailures() {
  std::map<std::string, std::string> known;
  std::ifstream in(kKnownFailures);
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view l = absl::StripAsciiWhitespace(line);
    if (l.empty() || l[0] == '#') continue;
    const size_t space = l.find_first_of(" \t");
    const std::string id(l.substr(0, space));
    known[id] = space == absl::string_view::npos
                    ? ""
                    : std::string(absl::StripAsciiWhitespace(l.substr(space)));
  }
  return known;
}

std::string FirstLine(const std::string& text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  std::string line(s.substr(0, s.find('\n')));
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

fs::path TempDir(const std::string& tag) {
  fs::path dir = fs::temp_directory_path() / absl::StrCat("ovfix_modern_", tag, "_", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// One onnxruntime job per (output folder, model, inputs); one node process for all.
struct OrtJob {
  fs::path out;
  std::string model;
  std::vector<std::string> inputs;
};

void RunOrtJobs(const std::string& modules, const std::vector<OrtJob>& jobs,
                const fs::path& jobs_file) {
  {
    std::ofstream f(jobs_file);
    for (const OrtJob& j : jobs) {
      f << j.out.string() << '\t' << j.model;
      for (const std::string& in : j.inputs) f << '\t' << in;
      f << '\n';
    }
  }
  testing_support::RunOrtBatch(modules, jobs_file.string());
}

// onnxruntime's outputs in `dir`, or its error.
struct OrtResult {
  std::vector<Tensor> outputs;
  std::string error;
};

OrtResult ReadOrtResult(const fs::path& dir) {
  OrtResult r;
  if (fs::exists(dir / "error.txt")) {
    r.error = "onnxruntime: " + FirstLine(testing::Slurp(dir / "error.txt"));
    return r;
  }
  for (int k = 0;; ++k) {
    const fs::path file = dir / absl::StrCat("output_", k, ".pb");
    if (!fs::exists(file)) break;
    absl::StatusOr<Tensor> t = ReadTensorFile(file.string());
    if (!t.ok()) {
      r.error = absl::StrCat("reading onnxruntime's ", file.string(), ": ", t.status().message());
      return r;
    }
    r.outputs.push_back(*std::move(t));
  }
  if (r.outputs.empty()) r.error = "onnxruntime wrote no outputs";
  return r;
}

std::string Dims(const Tensor& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.rank(); ++i) absl::StrAppend(&s, i ? "," : "", t.dim(i));
  return s + "]";
}

// "" when `actual` matches `expected` as the header describes.
std::string CompareToOrt(const Tensor& actual, const Tensor& expected) {
  if (actual.type() != expected.type()) {
    return absl::StrCat("type ", std::string(DataTypeName(actual.type())), ", onnxruntime ",
                        std::string(DataTypeName(expected.type())));
  }
  if (actual.dims() != expected.dims()) {
    return absl::StrCat("shape ", Dims(actual), ", onnxruntime ", Dims(expected));
  }
  const int64_t n = expected.numel();
  if (!IsFloatingPoint(expected.type())) {
    for (int64_t i = 0; i < n; ++i) {
      if (actual.GetAsInt64(i) != expected.GetAsInt64(i)) {
        return absl::StrCat("element ", i, ": ", actual.GetAsInt64(i), ", onnxruntime ",
                            expected.GetAsInt64(i));
      }
    }
    return "";
  }
  double max_ref = 0, max_diff = 0;
  int64_t worst = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double e = expected.GetAsDouble(i);
    if (std::isfinite(e)) max_ref = std::max(max_ref, std::fabs(e));
  }
  for (int64_t i = 0; i < n; ++i) {
    const double a = actual.GetAsDouble(i), e = expected.GetAsDouble(i);
    if (std::isnan(e) || std::isnan(a) || std::isinf(e) || std::isinf(a)) {
      const bool same = (std::isnan(e) && std::isnan(a)) || (std::isinf(e) && a == e);
      if (!same) return absl::StrCat("element ", i, ": ", a, ", onnxruntime ", e);
      continue;
    }
    if (std::fabs(a - e) > max_diff) {
      max_diff = std::fabs(a - e);
      worst = i;
    }
  }
  const double bound = 1e-4 * std::max(1.0, max_ref);
  if (max_diff > bound) {
    return absl::StrCat("max |diff| ", max_diff, " > ", bound, " at element ", worst, " (",
                        actual.GetAsDouble(worst), ", onnxruntime ", expected.GetAsDouble(worst),
                        ")");
  }
  return "";
}

// Runs `c` on ovfix's cpu session; "" when every output matches onnxruntime's.
std::string RunOvfixCpu(const Case& c, const OrtResult& ort) {
  if (!ort.error.empty()) return ort.error;
  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel((c.dir / "model.onnx").string());
  if (!model.ok()) return absl::StrCat("load: ", FirstLine(std::string(model.status().message())));
  SessionOptions options;
  options.threads = 1;
  absl::StatusOr<std::unique_ptr<CpuSession>> session = CpuSession::Create(**model, options);
  if (!session.ok())
    return absl::StrCat("session: ", FirstLine(std::string(session.status().message())));
  TensorMap feeds;
  size_t k = 0;
  for (const Value* v : (*model)->graph().inputs()) {
    if (v->is_initializer()) continue;
    if (k >= c.inputs.size()) return absl::StrCat("no input file for '", v->name(), "'");
    absl::StatusOr<Tensor> t = ReadTensorFile(c.inputs[k++]);
    if (!t.ok()) return absl::StrCat("input: ", t.status().message());
    feeds[v->name()] = *std::move(t);
  }
  absl::StatusOr<std::vector<Tensor>> outputs = (*session)->Run(feeds);
  if (!outputs.ok())
    return absl::StrCat("run: ", FirstLine(std::string(outputs.status().message())));
  if (outputs->size() != ort.outputs.size()) {
    return absl::StrCat(outputs->size(), " outputs, onnxruntime ", ort.outputs.size());
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    const std::string why = CompareToOrt((*outputs)[i], ort.outputs[i]);
    if (!why.empty()) {
      return absl::StrCat("output ", i, " '", (*model)->graph().outputs()[i]->name(), "': ", why);
    }
  }
  return "";
}

// Checks the outcomes (id -> "" or the failure) against the expected-failure list: prints
// every failure, and fails the test on unlisted failures and on listed cases that pass.
void CheckAgainstKnownFailures(const std::map<std::string, std::string>& outcomes) {
  const std::map<std::string, std::string> known = KnownFailures();
  std::vector<std::string> unexpected, fixed;
  for (const auto& [id, why] : outcomes) {
    const bool listed = known.contains(id);
    if (!why.empty()) {
      std::printf("  FAIL %s%s: %s\n", id.c_str(), listed ? " (known)" : "", why.c_str());
      if (!listed) unexpected.push_back(absl::StrCat(id, ": ", why));
    } else if (listed) {
      fixed.push_back(id);
    }
  }
  std::fflush(stdout);
  for (const std::string& u : unexpected) ADD_FAILURE() << "unexpected failure " << u;
  for (const std::string& f : fixed) {
    ADD_FAILURE() << f << " passes now: remove it from " << kKnownFailures;
  }
}

void RunCases(const std::string& kind) {
  const std::vector<Case> cases = Cases(kind);
  if (cases.empty() && std::getenv("OVFIX_MODERN_FILTER") == nullptr) {
    FAIL() << "no cases in " << kRoot << "/" << kind;
  }
  OVFIX_REQUIRE_ORT(modules);
  const fs::path tmp = TempDir(kind);
  std::vector<OrtJob> jobs;
  for (const Case& c : cases)
    jobs.push_back({tmp / c.id, (c.dir / "model.onnx").string(), c.inputs});
  RunOrtJobs(modules, jobs, tmp / "jobs.txt");

  std::map<std::string, std::string> outcomes;
  std::map<int64_t, std::pair<int, int>> per_opset;  // opset -> (matching, all)
  for (const Case& c : cases) {
    const std::string why = RunOvfixCpu(c, ReadOrtResult(tmp / c.id));
    outcomes[c.id] = why;
    auto& [ok, all] = per_opset[c.opset];
    ok += why.empty() ? 1 : 0;
    ++all;
  }
  const std::string noun = kind == "nodes" ? "node" : "model";
  for (const auto& [opset, counts] : per_opset) {
    std::printf("opset %lld: %d of %d %s cases match onnxruntime\n", static_cast<long long>(opset),
                counts.first, counts.second, noun.c_str());
  }
  CheckAgainstKnownFailures(outcomes);
  fs::remove_all(tmp);
}

TEST(ModernOnnx, NodeCases) { RunCases("nodes"); }

TEST(ModernOnnx, ModelClasses) { RunCases("models"); }

struct Target {
  std::string name;   // in the case id: convert/<case>/<name>
  std::string flags;  // after --target
};

const std::vector<Target>& Targets() {
  static const std::vector<Target> targets = {
      {"gpu-fp16", "gpu-fp16"},
      {"tensorrt", "tensorrt"},
      {"openvino-gpu", "openvino-gpu --batch 1"},
  };
  return targets;
}

TEST(ModernOnnx, ConvertedModelsRunInOnnxruntime) {
  const std::vector<Case> cases = Cases("models");
  if (cases.empty() && std::getenv("OVFIX_MODERN_FILTER") == nullptr) {
    FAIL() << "no cases in " << kRoot << "/models";
  }
  OVFIX_REQUIRE_ORT(modules);
  const fs::path tmp = TempDir("convert");

  // The originals in onnxruntime (the reference), then every conversion.
  std::vector<OrtJob> jobs;
  for (const Case& c : cases) {
    jobs.push_back({tmp / "ref" / c.id, (c.dir / "model.onnx").string(), c.inputs});
  }
  RunOrtJobs(modules, jobs, tmp / "ref_jobs.txt");

  std::map<std::string, std::string> outcomes;
  std::vector<std::pair<std::string, const Case*>> converted;  // id, case
  jobs.clear();
  for (const Case& c : cases) {
    for (const Target& t : Targets()) {
      const std::string id = absl::StrCat("convert/", c.dir.filename().string(), "/", t.name);
      const fs::path dir = tmp / id;
      fs::create_directories(dir);
      const std::string out = (dir / "model.onnx").string();
      const testing::CommandResult r = testing::RunOvfix(
          absl::StrCat("convert '", (c.dir / "model.onnx").string(), "' '", out, "' --target ",
                       t.flags, " --calibration-data '", c.dir.string(), "' --quiet"),
          600);
      if (r.exit_code != 0 || !fs::exists(out)) {
        outcomes[id] = absl::StrCat("ovfix convert exit ", r.exit_code, ": ",
                                    FirstLine(r.err.empty() ? r.out : r.err));
        continue;
      }
      jobs.push_back({dir / "ort", out, testing_support::AsDeclared(out, c.inputs, dir)});
      converted.emplace_back(id, &c);
    }
  }
  RunOrtJobs(modules, jobs, tmp / "jobs.txt");

  for (const auto& [id, c] : converted) {
    const OrtResult ref = ReadOrtResult(tmp / "ref" / c->id);
    const OrtResult got = ReadOrtResult(tmp / id / "ort");
    std::string why;
    if (!ref.error.empty()) {
      why = "the original: " + ref.error;
    } else if (!got.error.empty()) {
      why = got.error;
    } else if (got.outputs.size() != ref.outputs.size()) {
      why = absl::StrCat(got.outputs.size(), " outputs, the original ", ref.outputs.size());
    } else {
      for (size_t i = 0; i < got.outputs.size() && why.empty(); ++i) {
        const Tensor& a = got.outputs[i];
        const Tensor& e = ref.outputs[i];
        if (IsFloatingPoint(a.type()) != IsFloatingPoint(e.type())) {
          why = absl::StrCat("output ", i, ": type ", std::string(DataTypeName(a.type())),
                             ", the original ", std::string(DataTypeName(e.type())));
          break;
        }
        const Tensor af = IsFloatingPoint(a.type()) ? ConvertTensor(a, DataType::kFloat) : a;
        const Tensor ef = IsFloatingPoint(e.type()) ? ConvertTensor(e, DataType::kFloat) : e;
        const double err = RelativeError(af, ef, kFloat16Resolution);
        const double bound = IsFloatingPoint(e.type()) ? 0.05 : 0.0;
        if (!(err <= bound)) {
          why = absl::StrCat("output ", i, ": relative error ", err, " > ", bound, " (shape ",
                             Dims(a), ", the original ", Dims(e), ")");
        }
      }
    }
    outcomes[id] = why;
  }

  std::map<std::string, std::pair<int, int>> per_target;
  for (const auto& [id, why] : outcomes) {
    auto& [ok, all] = per_target[id.substr(id.rfind('/') + 1)];
    ok += why.empty() ? 1 : 0;
    ++all;
  }
  for (const auto& [target, counts] : per_target) {
    std::printf("--target %s: %d of %d converted models run in onnxruntime and match\n",
                target.c_str(), counts.first, counts.second);
  }
  CheckAgainstKnownFailures(outcomes);
  fs::remove_all(tmp);
}

// The list names only cases that exist.
TEST(ModernOnnx, KnownFailuresNameExistingCases) {
  std::set<std::string> ids;
  for (const char* kind : {"nodes", "models"}) {
    for (const Case& c : Cases(kind)) {
      ids.insert(c.id);
      for (const Target& t : Targets()) {
        ids.insert(absl::StrCat("convert/", c.dir.filename().string(), "/", t.name));
      }
    }
  }
  if (std::getenv("OVFIX_MODERN_FILTER") != nullptr) GTEST_SKIP() << "filtered";
  for (const auto& [id, why] : KnownFailures()) {
    EXPECT_TRUE(ids.contains(id)) << id << " in " << kKnownFailures << " is no case";
    EXPECT_FALSE(why.empty()) << id << " in " << kKnownFailures << " gives no reason";
  }
}

}  // namespace
}  // namespace ovfix::exec
