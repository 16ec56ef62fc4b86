// The OpenCL op table registers kernels for the versions whose meaning they implement: the
// element-wise ops from their op group's versions, not 1..99.
#include "exec/opencl/op_context.h"
#include "gtest/gtest.h"

namespace ovfix::exec::opencl {
namespace {

TEST(OpTable, ElementWiseKernelsStartWhereTheirGroupsDo) {
  EXPECT_EQ(FindOp("Add", 6), nullptr);  // broadcast only with the `broadcast` attribute
  EXPECT_NE(FindOp("Add", 7), nullptr);
  EXPECT_NE(FindOp("Add", 17), nullptr);
  EXPECT_EQ(FindOp("Max", 7), nullptr);  // no broadcasting before 8
  EXPECT_NE(FindOp("Max", 8), nullptr);
  EXPECT_EQ(FindOp("GreaterOrEqual", 11), nullptr);
  EXPECT_NE(FindOp("GreaterOrEqual", 12), nullptr);
  EXPECT_EQ(FindOp("HardSwish", 13), nullptr);
  EXPECT_NE(FindOp("HardSwish", 14), nullptr);
  EXPECT_NE(FindOp("Relu", 6), nullptr);
  EXPECT_EQ(FindOp("Where", 8), nullptr);
  EXPECT_NE(FindOp("Where", 9), nullptr);
  EXPECT_NE(FindOp("ReduceLogSumExp", 13), nullptr);
  EXPECT_EQ(FindOp("Mod", 13), nullptr);  // in the group, but no kernel
}

TEST(OpTable, OtherKernelsHaveTheirRealFirstVersions) {
  EXPECT_EQ(FindOp("BatchNormalization", 7), nullptr);  // `spatial` before 9
  EXPECT_NE(FindOp("BatchNormalization", 9), nullptr);
  EXPECT_EQ(FindOp("Cast", 5), nullptr);  // `to` was a string
  EXPECT_NE(FindOp("Cast", 6), nullptr);
  EXPECT_NE(FindOp("Conv", 1), nullptr);
  EXPECT_NE(FindOp("Conv", 200), nullptr);  // open-ended, not 99
}

}  // namespace
}  // namespace ovfix::exec::opencl
