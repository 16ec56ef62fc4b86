// Repair to the criterion: when the fp16 conversion misses the accuracy criterion, find the
// fewest nodes whose keeping in fp32 makes it meet, keep those, and convert again.
//
// Units. The float16 nodes of the failed conversion (Casts aside) are grouped in graph order
// into chains that start at each node that computes a sum over many products (Conv,
// ConvTranspose, MatMul, Gemm, Einsum): a block between two convolutions, with its
// normalization, activation and residual Add; a decomposed normalization has no such node
// and stays one unit. The repair adds whole units and gives back units or single nodes.
//
// Search (SearchFewestUnits, independent of models so that its rules are tested on their
// own). Each evaluation converts with a set of units in fp32 and measures the criterion's
// score on every input set (lower is better, <= 1 meets it); one run of it, with every
// activation captured, also ranks the units left by the error each adds (its values' error
// against fp32 minus that of the values it reads). Then:
//   1. Add: the best-ranked units, enough of them to cover the share of the added error
//      that must go, and at least a share of the units that doubles each round, join the
//      set. A round whose score is not lower than the best so far is not kept (its units
//      stay candidates; the next round takes more of them from the kept set). The rounds
//      stop at the first set that meets the criterion: the smallest found.
//   2. Give back: the nodes of the last round (lower-ranked half first), then those of
//      earlier rounds, are given back in halves; a give-back that still meets the criterion
//      is kept, one that does not is split further (down to single nodes, so part of a unit
//      can go) while evaluations remain.
// At most `max_evaluations` evaluations (the caller derives it from a budget of model runs).
// The last add round allowed takes every unit left, so the search ends with a set that
// meets the criterion whenever the fp32 model does; when that set is every node, only the
// fp32 model met it and the repair says so (`only_fp32`) instead of writing it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/validation.h"
#include "ir/model.h"

namespace ovfix::converter {

struct RepairedNode {
  std::string node;  // Describe() in the converted model
  std::string op_type;
  std::string output;       // the name of its first output (what the repair keys it by)
  double error_before = 0;  // its output's error in the first conversion
  double error_after = 0;   // in the final model
  int round = 0;
};

// One evaluation of the repair: what it tried and what it measured. Round 0 is the
// conversion that failed.
struct RepairRound {
  int round = 0;
  bool give_back = false;  // gave units back (else added units)
  int nodes_changed = 0;   // added or given back
  int fp32_nodes = 0;      // float16 nodes of the first conversion kept in fp32
  double fp32_share = 0;   // of the converted model's float nodes, Casts aside
  double score = 0;        // the criterion's (max_error / tolerance); <= 1 meets it
  double error = 0;        // worst output error
  bool kept = false;       // the round's set became the repair's
};

struct RepairResult {
  std::unique_ptr<Model> model;  // meets the criterion, or the best attempt
  EndToEndResult end_to_end;     // of its serialized bytes
  std::vector<RepairedNode> kept;
  std::vector<RepairRound> history;
  int rounds = 0;
  int model_runs = 0;
  bool within_tolerance = false;
  // Only every float node in fp32 met the criterion: no fp16 conversion to write.
  bool only_fp32 = false;
};

// --- The search, on units of nodes ---

// What one evaluation measured: the score of the set, and for each unit an estimate of
// the error it adds (higher: more likely needed in fp32); ignored for kept units.
struct UnitProbe {
  double score = 0;
  std::vector<double> added;
};
// Converts with the flagged nodes in fp32 and measures.
using EvaluateUnits = std::function<absl::StatusOr<UnitProbe>(const std::vector<bool>& fp32)>;

struct UnitRound {
  std::vector<bool> fp32;  // per node
  double score = 0;
  bool give_back = false;
  int changed = 0;  // nodes added or given back
  bool kept = false;
};

struct UnitSearch {
  std::vector<bool> fp32;  // per node: the set found (none when the first probe met)
  double score = 0;
  std::vector<UnitRound> rounds;
  std::vector<int> round_of;  // per node: the add round that took it (0: not kept)
  bool meets() const { return score <= 1; }
};

// `nodes` nodes grouped in `units` (lists of node indices); `first`: the probe of the
// conversion with no node in fp32.
absl::StatusOr<UnitSearch> SearchFewestUnits(int nodes, const std::vector<std::vector<int>>& units,
                                             const UnitProbe& first, int max_evaluations,
                                             const EvaluateUnits& evaluate);

// --- The repair, on a model ---

// Converts a copy of the fp32 graph with the given nodes kept in fp32 (by first output
// name, with the reason): the pipeline's steps from the fp16 conversion on.
using Reconvert = std::function<absl::StatusOr<std::unique_ptr<Model>>(
    const std::map<std::string, std::string>& keep)>;

// At most this many full model runs for a repair (each evaluation runs the model once per
// input set; at least three evaluations whatever the number of sets).
constexpr int kRepairModelRuns = 20;

// `fp32` is the graph as it was right before the fp16 conversion; `first` the conversion
// that failed, `first_error` its measured end-to-end error; `reference` holds the input sets
// and the original model's outputs.
absl::StatusOr<RepairResult> RepairToTolerance(const Model& fp32, std::unique_ptr<Model> first,
                                               double first_error, ReferenceValidator& reference,
                                               double tolerance, const Reconvert& reconvert,
                                               const std::function<void(const std::string&)>& log);

// --- The island certificate ---
//
// After a conversion that meets the criteria (the repair's, or the first) on the user's
// calibration data (random inputs do not certify), each island is tried back in fp16 alone: the
// fp32 float nodes are grouped in units (connected components of islands in the graph: a reduction
// with its growth and tail, a block the repair kept); a unit whose nodes the spec keeps in fp32 (no
// float16 in the ONNX spec, control flow, ops outside the ONNX domain, --keep-fp32) is certified by
// that reason without a run. The others, the largest by multiply-adds first, are converted again
// with that unit alone in fp16 and measured on every input set: a unit whose conversion still meets
// the criteria goes back to fp16; one that does not is needed, and the first value that turned inf
// or NaN (else the unit's value with the largest error) says why. The model with every unit given
// back is measured once more; where the combination misses the criteria, the units given back
// return to fp32 one at a time (the closest to failing first) until it meets.
//
// Bounds: at most kCertifyUnits units tried, and at most kCertifyModelRuns model runs for the
// tries (each runs the model once per input set); plus one fp32 run to compare values with,
// and the combination's runs. The pipeline does not certify a model whose full run costs
// (weights past 64 MB, or activations past the store's memory): IslandCertificate::skipped
// says so.
constexpr int kCertifyUnits = 24;
constexpr int kCertifyModelRuns = 48;

// One fp32 node of the conversion as the island policy or the repair left it.
struct IslandInput {
  std::string node;  // Describe()
  std::string op_type;
  std::string reason;
  std::string output;  // its first output's name in the fp32 graph
};

enum class IslandVerdict {
  kNeeded,     // with it in fp16 the criteria fail
  kGivenBack,  // with it in fp16 they hold: it computes in fp16 in the file written
  kKeptBack,   // held alone, but not with the others given back: back in fp32
  kSpec,       // its reason keeps it (the spec, --keep-fp32, a quantizer's input): not tried
  kNotTried,   // past the bound
};
// `bf16`: the verdicts of the islands tried in bfloat16 ("in bf16", "fp32 needed"...).
const char* IslandVerdictName(IslandVerdict v, bool bf16 = false);

struct CertifiedIsland {
  std::vector<std::string> nodes;    // Describe(), in graph order
  std::vector<std::string> outputs;  // first output names
  std::string reason;                // the reason of its first node (a few, joined)
  bool repair = false;               // the repair kept (some of) its nodes
  double multiply_adds = 0;
  double multiply_add_share = 0;  // of the model's
  IslandVerdict verdict = IslandVerdict::kNotTried;
  double score = -1;  // the criteria's score with it alone in fp16 (<= 1 meets); -1: not run
  double error = -1;  // the worst output error then
  // kNeeded: what went wrong first ("ReduceSum 'ss' computes 'ss' = inf in fp16 (fp32 |x| up
  // to 1.2e+06 > 65504)", or the unit's value with the largest error).
  std::string why;
};

struct IslandCertificate {
  // What the units were tried in: "fp16" (the certificate), or "bf16" (islands in bfloat16:
  // kGivenBack then means the unit computes in bfloat16 in the file written).
  std::string tried_as = "fp16";
  std::vector<CertifiedIsland> islands;  // tried (in the order tried), then the others
  int tried = 0, needed = 0, given_back = 0, kept_back = 0, spec = 0, not_tried = 0;
  int model_runs = 0;  // every run the certificate made
  int unit_bound = kCertifyUnits;
  int run_bound = kCertifyModelRuns;
  double final_score = -1;  // of the model with the give-backs (-1: none given back)
  int fp32_nodes_before = 0, fp32_nodes_after = 0;
  std::string note;     // the combination missed the criteria, a conversion that failed...
  std::string skipped;  // why the certificate did not run (nothing tried), or ""
};

// Converts a copy of the fp32 graph with `keep` kept in fp32 (by first output name, with the
// reason) and the units tried, `tried` (by first output name): left to fp16 whatever the island
// policy says (the certificate), or computed in bfloat16 (IslandsToBf16).
using ReconvertReleasing = std::function<absl::StatusOr<std::unique_ptr<Model>>(
    const std::map<std::string, std::string>& keep, const std::set<std::string>& tried)>;

struct CertifyResult {
  IslandCertificate certificate;
  // The conversion with the units given back (the last one `reconvert` made), or null when
  // none was given back.
  std::unique_ptr<Model> model;
  EndToEndResult end_to_end;  // of `model`
};

// `fp32`: the graph right before the fp16 conversion, with shapes inferred; `islands`: the
// fp32 nodes of the conversion that met the criteria; `keep`: the nodes it kept by request
// (the repair's), which reconverting with `keep` alone gives again.
absl::StatusOr<CertifyResult> CertifyIslands(const Model& fp32,
                                             const std::vector<IslandInput>& islands,
                                             const std::map<std::string, std::string>& keep,
                                             ReferenceValidator& reference,
                                             const ReconvertReleasing& reconvert,
                                             const std::function<void(const std::string&)>& log);

// --- Islands in bfloat16 (--island-precision bf16) ---
//
// After the certificate (or the repair, with --certify off), on a backend with bfloat16 kernels:
// the islands left in fp32 are grouped in units as the certificate groups them, and tried in
// bfloat16 (float's range: no overflow; 8 bits of significand). Every unit at once first: where
// the criteria hold, all of them compute in bfloat16 (one conversion and its runs). Else each
// unit alone, the largest by multiply-adds first, within the certificate's bounds (kCertifyUnits,
// kCertifyModelRuns), then the units that held alone together, the closest to failing back to
// fp32 first until the criteria hold. Islands the spec keeps (no bfloat16 in its schema, control
// flow, --keep-fp32, quantizer inputs) stay fp32 untried. The result is an IslandCertificate
// with tried_as "bf16".
absl::StatusOr<CertifyResult> IslandsToBf16(const Model& fp32,
                                            const std::vector<IslandInput>& islands,
                                            const std::map<std::string, std::string>& keep,
                                            ReferenceValidator& reference,
                                            const ReconvertReleasing& reconvert,
                                            const std::function<void(const std::string&)>& log);

}  // namespace ovfix::converter
