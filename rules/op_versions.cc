#include "rules/op_versions.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/op_schemas.h"

namespace ovfix::rules {
std::string OpVersionRange::ToString() const {
  const std::string op = domain.empty() ? op_type : absl::StrCat(domain, ".", op_type);
  if (since <= 1 && until == kOpenVersion) return op;
  return absl::StrCat(op, " ", since <= 1 ? "" : absl::StrCat(since), "..",
                      until == kOpenVersion ? "" : absl::StrCat(until));
}

int OpVersion(const Model& model, std::string_view domain, std::string_view op_type) {
  if (domain == "ai.onnx") domain = "";
  const int64_t opset = model.OpsetVersion(domain);
  if (opset <= 0) return -1;
  if (LatestOpset(domain) < 0) return static_cast<int>(opset);
  const auto* schema = FindSchema(op_type, static_cast<int>(opset), domain);
  if (schema == nullptr) return -1;
  return schema->SinceVersion();
}

std::vector<int> KnownOpVersions(std::string_view op_type) { return SchemaVersions(op_type, ""); }

std::string CheckOpVersionRange(const OpVersionRange& range) {
  if (range.until < range.since) {
    return absl::StrCat("version range ", range.since, "..", range.until, " is empty");
  }
  if (!range.domain.empty()) return "";  // onnx does not know custom domains' versions
  const std::vector<int> versions = KnownOpVersions(range.op_type);
  if (versions.empty()) return absl::StrCat("unknown op '", range.op_type, "'");
  if (range.since > 1 &&
      std::find(versions.begin(), versions.end(), range.since) == versions.end()) {
    return absl::StrCat(range.op_type, " has no version ", range.since, " (its versions are ",
                        absl::StrJoin(versions, ", "), ")");
  }
  return "";
}

const std::vector<Builder>& AllBuilders() {
  // The ops whose list argument moved from an attribute to input 1.
  static const std::vector<Builder>* builders = new std::vector<Builder>{
      {"unsqueeze", "Unsqueeze", "axes", 13},
      {"squeeze", "Squeeze", "axes", 13},
      {"split", "Split", "split", 13},
      {"reduce_sum", "ReduceSum", "axes", 13},
      {"reduce_mean", "ReduceMean", "axes", 18},
      {"reduce_max", "ReduceMax", "axes", 18},
      {"reduce_min", "ReduceMin", "axes", 18},
      {"reduce_prod", "ReduceProd", "axes", 18},
      {"reduce_sum_square", "ReduceSumSquare", "axes", 18},
      {"reduce_l1", "ReduceL1", "axes", 18},
      {"reduce_l2", "ReduceL2", "axes", 18},
      {"reduce_log_sum", "ReduceLogSum", "axes", 18},
      {"reduce_log_sum_exp", "ReduceLogSumExp", "axes", 18},
      {"pad", "Pad", "pads", 11},
  };
  return *builders;
}

const Builder* FindBuilder(std::string_view name) {
  for (const Builder& b : AllBuilders()) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

}  // namespace ovfix::rules
