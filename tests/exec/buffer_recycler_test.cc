// Buffer reuse: which buffers the recycler keeps and hands out, and a session whose released
// intermediates are reused (within a run and across runs) still computing hand-worked results,
// zero-filled outputs included.
#include "exec/buffer_recycler.h"

#include <cstring>

#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/text_form.h"

namespace ovfix::exec {
namespace {

Tensor Floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  return Tensor::FromVector(DataType::kFloat, std::move(dims), v);
}

TEST(BufferRecycler, HandsBackAReleasedBufferOfTheSameSize) {
  BufferRecycler recycler;
  Tensor t = Floats({4}, {1, 2, 3, 4});
  const void* data = t.raw();
  recycler.Give(t);
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(recycler.free_bytes(), 16u);
  EXPECT_NE(recycler.Take(32, false)->data(), data);  // another size: a new buffer
  std::shared_ptr<Buffer> again = recycler.Take(16, /*zero=*/true);
  EXPECT_EQ(again->data(), data);
  const float* values = reinterpret_cast<const float*>(again->data());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(values[i], 0.0f);
  EXPECT_EQ(recycler.free_bytes(), 0u);
}

TEST(BufferRecycler, KeepsNoBufferThatIsStillViewedOrNotItsOwn) {
  BufferRecycler recycler;
  Tensor t = Floats({2, 2}, {1, 2, 3, 4});
  Tensor view = t.Reshaped({4});
  recycler.Give(t);
  EXPECT_EQ(recycler.free_bytes(), 0u);
  Tensor parsed(DataType::kFloat, {1}, Buffer::FromString(std::string(4, '\0')));
  recycler.Give(parsed);
  EXPECT_EQ(recycler.free_bytes(), 0u);
  EXPECT_EQ(view.data<float>()[3], 4.0f);
}

// Slices (values made inside a Concat's output, exec/concat_in_place.h) are never kept
// themselves; their whole is, once the last of them and the whole's own tensor are gone.
TEST(BufferRecycler, KeepsTheWholeOfSlicesOnlyOnceNoneIsLeft) {
  BufferRecycler recycler;
  std::shared_ptr<Buffer> whole = recycler.Take(16, /*zero=*/true);
  const std::byte* data = whole->data();
  Tensor front(DataType::kFloat, {2}, Buffer::Slice(whole, 0, 8));
  Tensor back(DataType::kFloat, {2}, Buffer::Slice(Buffer::Slice(whole, 4, 12), 4, 8));
  EXPECT_EQ(back.buffer()->whole(), whole);  // a slice of a slice views the whole
  EXPECT_EQ(back.raw(), data + 8);
  whole.reset();
  recycler.Give(front);
  EXPECT_EQ(recycler.free_bytes(), 0u);  // `back` still holds the whole
  recycler.Give(back);
  EXPECT_EQ(recycler.free_bytes(), 16u);
  EXPECT_EQ(recycler.Take(16, false)->data(), data);
  EXPECT_EQ(recycler.Take(8, false)->whole(), nullptr);  // no slice ever handed out
}

TEST(BufferRecycler, RespectsItsLimit) {
  BufferRecycler recycler(/*max_bytes=*/16);
  Tensor a = Floats({4}, {1, 2, 3, 4}), b = Floats({4}, {5, 6, 7, 8});
  recycler.Give(a);
  recycler.Give(b);
  EXPECT_EQ(recycler.free_bytes(), 16u);
}

// t and u are released before MaxUnpool runs, so its output reuses one of their buffers
// (same size): the positions MaxUnpool does not write must still read zero.
constexpr char kReleaseThenUnpool[] = R"(
  <ir_version: 8, opset_import: ["" : 11]>
  agraph (float[1,1,4,4] a, float[1,1,2,2] x, int64[1,1,2,2] i)
      => (float[1,1,4,4] z, float[1,1,4,4] y) {
    t = Mul(a, a)
    u = Neg(t)
    z = Add(u, a)
    y = MaxUnpool <kernel_shape = [2, 2], strides = [2, 2]> (x, i)
  })";

TEST(SessionBufferReuse, ReusedBuffersGiveHandWorkedResultsRunAfterRun) {
  auto model = ParseModelText(kReleaseThenUnpool);
  ASSERT_TRUE(model.ok()) << model.status();
  SessionOptions options;
  options.threads = 2;
  auto session = CreateSession(**model, options);
  ASSERT_TRUE(session.ok()) << session.status();

  std::vector<float> a(16);
  for (int k = 0; k < 16; ++k) a[k] = static_cast<float>(k + 1);
  auto first = (*session)->Run({{"a", Floats({1, 1, 4, 4}, a)},
                                {"x", Floats({1, 1, 2, 2}, {5, 6, 7, 8})},
                                {"i", Tensor::FromVector(DataType::kInt64, {1, 1, 2, 2},
                                                         std::vector<int64_t>{0, 3, 12, 15})}});
  ASSERT_TRUE(first.ok()) << first.status();
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ((*first)[0].data<float>()[k], a[k] - a[k] * a[k]) << k;
  }
  std::vector<float> unpooled(16, 0.0f);
  unpooled[0] = 5, unpooled[3] = 6, unpooled[12] = 7, unpooled[15] = 8;
  for (int k = 0; k < 16; ++k) EXPECT_EQ((*first)[1].data<float>()[k], unpooled[k]) << k;

  for (int round = 0; round < 3; ++round) {
    auto next = (*session)->Run({{"a", Floats({1, 1, 4, 4}, std::vector<float>(16, 2.0f))},
                                 {"x", Floats({1, 1, 2, 2}, {1, 2, 3, 4})},
                                 {"i", Tensor::FromVector(DataType::kInt64, {1, 1, 2, 2},
                                                          std::vector<int64_t>{5, 6, 9, 10})}});
    ASSERT_TRUE(next.ok()) << next.status();
    std::vector<float> expected(16, 0.0f);
    expected[5] = 1, expected[6] = 2, expected[9] = 3, expected[10] = 4;
    for (int k = 0; k < 16; ++k) {
      EXPECT_EQ((*next)[0].data<float>()[k], -2.0f) << k;
      EXPECT_EQ((*next)[1].data<float>()[k], expected[k]) << k;
    }
  }
  // The first run's outputs are the caller's: later runs did not write into them.
  for (int k = 0; k < 16; ++k) EXPECT_EQ((*first)[1].data<float>()[k], unpooled[k]) << k;
}

}  // namespace
}  // namespace ovfix::exec
