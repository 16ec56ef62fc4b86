// The error-propagation macros: the first error returns, the expression runs once, and
// values move out of the StatusOr (move-only types included).
#include "ir/status_macros.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace ovfix {
namespace {

absl::StatusOr<std::unique_ptr<int>> MakeInt(int v, int* calls) {
  ++*calls;
  if (v < 0) return absl::InvalidArgumentError("negative");
  return std::make_unique<int>(v);
}

absl::StatusOr<int> SumOfTwo(int a, int b, int* calls) {
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<int> x, MakeInt(a, calls));
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<int> y, MakeInt(b, calls));
  return *x + *y;
}

absl::Status CheckBoth(int a, int b, int* calls) {
  OVFIX_RETURN_IF_ERROR(SumOfTwo(a, 0, calls).status());
  OVFIX_RETURN_IF_ERROR(SumOfTwo(b, 0, calls).status());
  return absl::OkStatus();
}

TEST(StatusMacros, AssignOrReturnPassesValuesAndStopsAtTheFirstError) {
  int calls = 0;
  absl::StatusOr<int> sum = SumOfTwo(2, 3, &calls);
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(*sum, 5);
  EXPECT_EQ(calls, 2);

  calls = 0;
  sum = SumOfTwo(-1, 3, &calls);
  EXPECT_EQ(sum.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sum.status().message(), "negative");
  EXPECT_EQ(calls, 1);  // the second call never ran
}

TEST(StatusMacros, AssignOrReturnAssignsToAnExistingVariable) {
  int calls = 0;
  auto f = [&]() -> absl::StatusOr<int> {
    std::unique_ptr<int> p;
    OVFIX_ASSIGN_OR_RETURN(p, MakeInt(7, &calls));
    return *p;
  };
  EXPECT_EQ(*f(), 7);
}

TEST(StatusMacros, ReturnIfErrorReturnsTheFirstFailure) {
  int calls = 0;
  EXPECT_TRUE(CheckBoth(1, 2, &calls).ok());
  calls = 0;
  const absl::Status s = CheckBoth(1, -2, &calls);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace ovfix
