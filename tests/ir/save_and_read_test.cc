// SaveModelAndRead: the model read back from the files as they are written, its weights
// awaited one by one beside the data file's write; and the views of a file being written.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/mapped_file.h"
#include "ir/model_io.h"
#include "ir/tensor.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

constexpr int kWeights = 6;
constexpr int64_t kElements = 50000;  // 200 KB each: external, and not a multiple of 64

float ValueOf(int weight, int64_t i) { return static_cast<float>(weight * 1000003 + i) * 0.25f; }

// A model whose outputs are `kWeights` initializers through Identity nodes.
std::unique_ptr<Model> WeightsModel() {
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  proto.add_opset_import()->set_version(17);
  onnx::GraphProto* g = proto.mutable_graph();
  g->set_name("weights");
  for (int k = 0; k < kWeights; ++k) {
    onnx::TensorProto* w = g->add_initializer();
    w->set_name(absl::StrCat("w", k));
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(kElements);
    w->mutable_raw_data()->resize(kElements * sizeof(float));
    onnx::NodeProto* node = g->add_node();
    node->set_op_type("Identity");
    node->add_input(w->name());
    node->add_output(absl::StrCat("y", k));
    onnx::ValueInfoProto* y = g->add_output();
    y->set_name(node->output(0));
    y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  auto model = ModelFromProto(std::move(proto), ".", "weights.onnx");
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

// Weight k's bytes are made (lazily, as a converted weight is) only once the reader has read
// weight k - 1: a save that wrote every weight before reading any would wait here, and is
// told so after a few seconds instead of hanging.
struct Handshake {
  std::mutex mutex;
  std::condition_variable changed;
  int read = 0;
  std::atomic<bool> waited_in_vain = false;

  void AwaitRead(int count) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!changed.wait_for(lock, std::chrono::seconds(5), [&] { return read >= count; })) {
      waited_in_vain = true;
    }
  }
  void Read(int count) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      read = count;
    }
    changed.notify_all();
  }
};

TEST(SaveAndRead, TheReaderRunsBesideTheWriteAndSeesTheFileBytes) {
  std::unique_ptr<Model> model = WeightsModel();
  ASSERT_NE(model, nullptr);
  Handshake handshake;
  for (int k = 0; k < kWeights; ++k) {
    Value* v = model->graph().FindValue(absl::StrCat("w", k));
    ASSERT_NE(v, nullptr);
    Buffer::Producer produce = [k, &handshake](size_t offset, size_t length, std::byte* out) {
      handshake.AwaitRead(k);
      float* values = reinterpret_cast<float*>(out);
      const int64_t first = static_cast<int64_t>(offset / sizeof(float));
      for (size_t i = 0; i < length / sizeof(float); ++i) {
        values[i] = ValueOf(k, first + static_cast<int64_t>(i));
      }
    };
    v->set_tensor(Tensor(DataType::kFloat, {kElements},
                         Buffer::Lazy(kElements * sizeof(float), std::move(produce))));
  }
  const auto dir = testing::TempDir("save_and_read");
  const std::string out = (dir / "m.onnx").string();
  SaveOptions options;
  options.external_data = ExternalDataMode::kAlways;
  std::vector<std::vector<float>> seen;
  bool renamed_before_read = true;
  absl::Status read_status;
  absl::Status saved =
      SaveModelAndRead(*model, out, options, [&](absl::StatusOr<std::unique_ptr<Model>> written) {
        if (!written.ok()) {
          read_status = written.status();
          return;
        }
        // Read before the files are renamed into place: none is there yet.
        renamed_before_read =
            std::filesystem::exists(out) || std::filesystem::exists(out + ".data");
        for (int k = 0; k < kWeights; ++k) {
          const Value* v = (*written)->graph().FindValue(absl::StrCat("w", k));
          const float* data = v->tensor().data<float>();
          seen.emplace_back(data, data + kElements);
          handshake.Read(k + 1);
        }
      });
  ASSERT_TRUE(saved.ok()) << saved;
  ASSERT_TRUE(read_status.ok()) << read_status;
  EXPECT_FALSE(handshake.waited_in_vain) << "the data file was written before the reader ran";
  EXPECT_FALSE(renamed_before_read);
  ASSERT_EQ(seen.size(), static_cast<size_t>(kWeights));
  // What the reader saw is what was made, and what the renamed file holds.
  auto reloaded = LoadModel(out);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  for (int k = 0; k < kWeights; ++k) {
    SCOPED_TRACE(k);
    const float* file =
        (*reloaded)->graph().FindValue(absl::StrCat("w", k))->tensor().data<float>();
    for (int64_t i : {int64_t{0}, kElements / 2, kElements - 1}) {
      EXPECT_EQ(seen[k][i], ValueOf(k, i));
    }
    EXPECT_EQ(std::memcmp(seen[k].data(), file, kElements * sizeof(float)), 0);
  }
  std::filesystem::remove_all(dir);
}

TEST(SaveAndRead, AnInlineModelIsReadFromItsFile) {
  std::unique_ptr<Model> model = WeightsModel();
  ASSERT_NE(model, nullptr);
  Tensor w(DataType::kFloat, {kElements});
  for (int64_t i = 0; i < kElements; ++i) w.data<float>()[i] = ValueOf(3, i);
  model->graph().FindValue("w3")->set_tensor(w);
  const auto dir = testing::TempDir("save_and_read_inline");
  const std::string out = (dir / "m.onnx").string();
  SaveOptions options;
  options.external_data = ExternalDataMode::kNever;
  bool read = false;
  ASSERT_TRUE(
      SaveModelAndRead(*model, out, options, [&](absl::StatusOr<std::unique_ptr<Model>> written) {
        ASSERT_TRUE(written.ok()) << written.status();
        const Tensor& t = (*written)->graph().FindValue("w3")->tensor();
        EXPECT_EQ(std::memcmp(t.raw(), w.raw(), w.nbytes()), 0);
        read = true;
      }).ok());
  EXPECT_TRUE(read);
  EXPECT_FALSE(std::filesystem::exists(out + ".data"));
  std::filesystem::remove_all(dir);
}

// A view of a file being written returns its bytes only once the writer has passed them.
TEST(SaveAndRead, AViewAwaitsTheWriter) {
  const auto dir = testing::TempDir("view_awaits");
  const std::string path = (dir / "data").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 8192), 0);
  auto progress = std::make_shared<WriteProgress>();
  auto file = MappedFile::MapBeingWritten(fd, 8192, path, progress);
  ASSERT_TRUE(file.ok()) << file.status();
  std::shared_ptr<Buffer> view = Buffer::View(*file, 4096, 1024);
  EXPECT_FALSE(view->is_pending());  // awaited, not made: data() keeps nothing in memory
  std::atomic<bool> returned = false;
  std::byte first{};
  std::thread reader([&] {
    first = view->data()[0];
    returned = true;
  });
  const std::vector<std::byte> bytes(8192, std::byte{7});
  ASSERT_EQ(::pwrite(fd, bytes.data(), 4096, 0), 4096);
  progress->Advance(4096);  // not yet past the view's end (5120)
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned);
  ASSERT_EQ(::pwrite(fd, bytes.data(), 4096, 4096), 4096);
  progress->Advance(8192);
  reader.join();
  EXPECT_TRUE(returned);
  EXPECT_EQ(first, std::byte{7});
  // A writer that gives up releases its readers.
  std::shared_ptr<Buffer> tail = Buffer::View(*file, 8000, 192);
  auto stalled = std::make_shared<WriteProgress>();
  auto second = MappedFile::MapBeingWritten(fd, 8192, path, stalled);
  ASSERT_TRUE(second.ok());
  std::thread waiter([&] { Buffer::View(*second, 0, 8192)->data(); });
  stalled->Finish();
  waiter.join();
  ::close(fd);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
