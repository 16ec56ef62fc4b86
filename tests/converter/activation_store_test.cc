// The activation store keeps tensors as they are within its budget and moves the ones past it
// to its file, bit for bit; what is let go no longer counts.
#include "converter/activation_store.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace ovfix::converter {
namespace {

constexpr size_t kMB = size_t{1} << 20;

Tensor Filled(int64_t floats, float first) {
  Tensor t = Tensor::Uninitialized(DataType::kFloat, {floats});
  for (int64_t i = 0; i < floats; ++i) t.data<float>()[i] = first + static_cast<float>(i);
  return t;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.type() == b.type() && a.dims() == b.dims() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(ActivationStore, KeepsTensorsInMemoryWithinTheBudget) {
  ActivationStore store(4 * kMB);
  const Tensor a = Filled(kMB / 4, 0);  // 1 MB
  const Tensor kept = store.Keep(a);
  EXPECT_EQ(kept.buffer(), a.buffer());
  EXPECT_EQ(store.moved_bytes(), 0);
}

TEST(ActivationStore, MovesTensorsPastTheBudgetToItsFileBitForBit) {
  ActivationStore store(2 * kMB);
  const Tensor first = store.Keep(Filled(kMB / 4, 0));
  const Tensor second = store.Keep(Filled(kMB / 4, 1));
  const Tensor past = Filled(kMB / 4, 2);
  const Tensor moved = store.Keep(past);
  EXPECT_FALSE(first.buffer()->is_file_view());
  EXPECT_FALSE(second.buffer()->is_file_view());
  ASSERT_TRUE(moved.buffer()->is_file_view());
  EXPECT_NE(moved.buffer(), past.buffer());
  EXPECT_TRUE(SameBytes(moved, past));
  EXPECT_EQ(store.moved_bytes(), static_cast<int64_t>(kMB));
  // A small tensor stays where it is: a map of its own would cost more than it holds.
  const Tensor small = Filled(16, 3);
  EXPECT_EQ(store.Keep(small).buffer(), small.buffer());
}

TEST(ActivationStore, WhatIsLetGoNoLongerCounts) {
  ActivationStore store(2 * kMB);
  {
    const Tensor a = store.Keep(Filled(kMB / 4, 0));
    const Tensor b = store.Keep(Filled(kMB / 4, 1));
  }
  const Tensor c = Filled(kMB / 4, 2);
  EXPECT_EQ(store.Keep(c).buffer(), c.buffer());
  EXPECT_EQ(store.moved_bytes(), 0);
}

TEST(ActivationStore, UsesAgainTheFileRegionsOfTensorsLetGo) {
  ActivationStore store(0);
  std::vector<Tensor> kept;
  for (int round = 0; round < 8; ++round) {
    const Tensor t = Filled(kMB / 4, static_cast<float>(round));
    Tensor moved = store.Keep(t);
    ASSERT_TRUE(moved.buffer()->is_file_view());
    EXPECT_TRUE(SameBytes(moved, t)) << "round " << round;
    // Each round lets go of the tensor of the round before: its region holds this one.
    kept.assign(1, std::move(moved));
  }
  EXPECT_TRUE(SameBytes(kept[0], Filled(kMB / 4, 7)));
}

}  // namespace
}  // namespace ovfix::converter
