// The cpu backend's Session: the reference executor. Beyond the Session interface it runs
// graphs whose inputs or outputs are sequences or optionals (RunValues).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/buffer_recycler.h"
#include "exec/cpu/control_flow.h"
#include "exec/executor.h"
#include "exec/thread_pool.h"

namespace ovfix::exec {

struct Plan;  // a compiled graph (session.cc)

using ValueMap = std::map<std::string, RuntimeValue>;

class CpuSession : public Session {
 public:
  static absl::StatusOr<std::unique_ptr<CpuSession>> Create(const Model& model,
                                                            const SessionOptions& options);
  ~CpuSession() override;

  absl::StatusOr<std::vector<Tensor>> Run(const TensorMap& inputs) override;
  // Like Run, for graphs with sequence or optional inputs/outputs.
  absl::StatusOr<std::vector<RuntimeValue>> RunValues(const ValueMap& inputs);
  const TensorMap& captured() const override { return captured_; }
  // How many Concats of the last run found their inputs laid out in their output already and
  // copied nothing (SessionOptions::concat_in_place).
  int concat_views() const { return concat_views_; }
  // How many steps of the last run wrote their output over an input's buffer
  // (KernelDef::overwritable_input: a residual convolution over its residual).
  int inputs_written_over() const { return inputs_written_over_; }

 private:
  explicit CpuSession(const SessionOptions& options);

  // The model with its QDQ groups fused (qdq_fusion.h) when the plan runs that; null when
  // it runs the caller's model.
  std::unique_ptr<Model> fused_model_;
  std::unique_ptr<Plan> plan_;
  std::unique_ptr<ThreadPool> pool_;
  BufferRecycler recycler_;  // buffers of released values, for this and later runs
  // Outputs handed to the caller: a later run recycles each once the caller has released it
  // (a new allocation of a large output would be fresh pages on every run).
  std::vector<Tensor> handed_out_;
  TensorMap captured_;
  int concat_views_ = 0;
  int inputs_written_over_ = 0;
};

}  // namespace ovfix::exec
