// What a conversion did, for people and for build pipelines: the JSON report
// (--report FILE.json), the summary table printed at the end, and the progress bar shown on
// stderr while passes run (only when stderr is a terminal).
#pragma once

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "converter/conversion_time.h"
#include "converter/fp16_overflows.h"
#include "converter/precision_cost.h"
#include "converter/repair.h"
#include "converter/shape_observation.h"
#include "converter/validation.h"
#include "rules/passes/fp16_islands.h"
#include "rules/rewriter.h"

namespace ovfix::converter {

struct StepReport {
  std::string name;  // pass or rule set
  int rewrites = 0;  // committed
  int rolled_back = 0;
  double seconds = 0;
  // As the plan says (converter/conversion_plan.h StepStatus): whether it ran, and why not.
  bool runs = true;
  std::string why_not;
};

// What the repair did: the nodes it kept in fp32, in the order chosen.
struct Repair {
  std::vector<RepairedNode> kept;
  int rounds = 0;
  int model_runs = 0;
  double error_before = 0;           // end to end, before the repair
  std::vector<RepairRound> history;  // each evaluation, in order
  bool only_fp32 = false;            // only every float node in fp32 met the criterion
};

struct ConversionReport {
  std::string input, output, target;
  std::set<std::string> user_rules;  // the rules of the --rules files
  std::vector<StepReport> steps;
  std::vector<rules::RewriteRecord> rewrites;
  std::vector<rules::IslandNode> islands;
  bool validated = false;
  std::string validation_note;  // why not validated, when not
  std::string calibration;      // where the inputs came from, one line
  // Per input set, in the sets' order: the shape it is at (--shape-range: "max
  // images=1x3x1280x1280"; otherwise its dynamic inputs' dims, "x=1x3x64x64", or "").
  std::vector<std::string> set_labels;
  // A model with dynamic inputs validated without --shape-range: the shapes it was validated
  // at, and that no other shape was ("" otherwise).
  std::string shapes_note;
  // trtexec's --minShapes/--optShapes/--maxShapes matching --shape-range (tensorrt target).
  std::string trtexec_shapes;
  std::optional<EndToEndResult> end_to_end;
  std::optional<Repair> repair;
  // The island certificate (--certify on): each fp32 island tried back in fp16 alone.
  std::optional<IslandCertificate> certificate;
  // --island-precision bf16: the islands left in fp32 tried in bfloat16 (tried_as "bf16").
  std::optional<IslandCertificate> bf16_islands;
  // Options given that have no effect in this conversion, one line each (the command line
  // prints them as warnings).
  std::vector<std::string> warnings;
  // What the fp16 conversion left in fp32 (nodes, multiply-adds, weights, Casts), when it ran.
  std::optional<PrecisionCost> cost;
  int model_runs = 0;  // full runs of the model (reference, end to end, repair)
  double end_to_end_tolerance = 0;
  bool outputs_match = true;
  // Values whose shapes depend on data (NonZero, a Loop's trip count...): neither inference
  // nor a run can fix them, so they stay dynamic in the written model.
  std::vector<std::string> dynamic_values;
  int observed_shape_facts = 0;  // values whose rank or dims came from the reference run
  // If/Loop/Scan bodies that no calibration set ran: their rewrites used static facts only
  // and were not measured; what the target removes elsewhere may be left there.
  std::vector<BodyNotRun> bodies_not_run;
  int constant_ifs_inlined = 0;  // If nodes whose condition became a constant
  // bfloat16: whether the opset was raised so that more ops accept bfloat16, and what stays
  // fp32 for want of it (one line; empty when the conversion is not to bfloat16).
  std::string opset_note;
  // trtexec's --layerPrecisions / --layerOutputTypes naming the fp32 nodes of the written
  // model, for TensorRT builds that are not strongly typed (layer_precision_hints.h); empty
  // when the precision did not change or nothing stays fp32.
  std::string layer_precisions, layer_output_types;
  bool written = false;  // the output file was written (and kept)
  // Targets whose backend ignores fp32 islands: the values that still exceed fp16's range.
  bool islands_ignored = false;
  std::vector<Fp16Overflow> fp16_overflows;
  // Where the run with every float tensor in fp16 first turned a value into NaN or inf.
  std::optional<NonFiniteOrigin> first_non_finite;
  // Such a target's way to fp32 (Target::fp32_runtime), and whether --precision fp32 took it:
  // the file is then for the backend set to compute in fp32, and was validated so.
  std::string fp32_runtime;
  bool fp32_by_request = false;
  double seconds = 0;
  // Where the wall time went, load and save included (converter/conversion_time.h).
  TimeBreakdown time;
};

// The repair's lines of the console summary: its rounds (only those kept unless
// `every_round`), then the first `listed` nodes kept.
std::string RepairLines(const Repair& repair, size_t listed, bool every_round);
// The island certificate's summary line ("certificate: 7 island(s) tried, 5 needed, 2 given
// back (12 model runs)"), then, when `listed` > 0, one line per unit up to `listed`.
std::string CertificateLines(const IslandCertificate& certificate, size_t listed);
// ("islands in bf16: 3 unit(s) tried, 2 in bf16, 1 fp32 needed (6 model runs)" for the bf16
// tries).
// One unit of the certificate in one line: verdict, nodes, multiply-add share, score, why;
// `tried_as` the certificate's ("fp16", "bf16").
std::string CertifiedIslandLine(const CertifiedIsland& island,
                                const std::string& tried_as = "fp16");
std::string ReportToJson(const ConversionReport& report);
// Rewrites per rule, islands, end-to-end error: a few lines for the console.
std::string SummaryTable(const ConversionReport& report);

// The nodes of a converted model that compute floats (Casts, Constants and control flow
// aside), in every graph, by whether they compute float16 or only float32.
struct FloatNodeCounts {
  int float16 = 0, float32 = 0;
  double Float32Share() const { return float32 / std::max(1.0, 1.0 * (float16 + float32)); }
};
FloatNodeCounts CountFloatNodes(const Model& model);

// A one-line progress bar redrawn in place on a terminal; silent otherwise.
class ProgressBar {
 public:
  explicit ProgressBar(std::FILE* out);
  ~ProgressBar();
  void Update(int done, int total, const std::string& label);
  void Finish();

 private:
  std::FILE* out_;
  bool active_;
  bool drawn_ = false;
};

}  // namespace ovfix::converter
