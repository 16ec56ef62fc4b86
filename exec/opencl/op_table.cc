// The opencl op table: every op with an OpenCL kernel, by op type and opset range.
#include "exec/opencl/op_context.h"

namespace ovfix::exec::opencl {

const std::vector<OpDef>& AllOps() {
  static const std::vector<OpDef> table = [] {
    std::vector<OpDef> t;
    AddElementwiseOps(t);
    AddShapeOps(t);
    AddConvOps(t);
    AddReduceOps(t);
    AddDataOps(t);
    AddQuantOps(t);
    AddRecurrentOps(t);
    AddResizeOps(t);
    AddConvTransposeOps(t);
    AddDetectionOps(t);
    AddModernOps(t);
    return t;
  }();
  return table;
}

const OpDef* FindOp(std::string_view op_type, int opset) {
  for (const OpDef& d : AllOps()) {
    if (d.op_type == op_type && opset >= d.since_version && opset <= d.until_version) return &d;
  }
  return nullptr;
}

}  // namespace ovfix::exec::opencl
