// Tensor files (test_data_set_*/input_K.pb, --input NAME=FILE.pb): ReadTensorFile on a
// serialized TensorProto with raw_data or typed fields, any element type, strings included.
// Properties: a tensor that reads writes again, and what was written reads back as the same
// tensor (the same TensorProto encoding).
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "fuzz/scratch_folder.h"
#include "ir/tensor_proto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ovfix;
  const fuzz::ScratchFolder& scratch = fuzz::ScratchFolder::Get();
  const std::string path = scratch.Write("input_0.pb", data, size);
  std::string name;
  absl::StatusOr<Tensor> tensor = ReadTensorFile(path, &name);
  if (!tensor.ok()) return 0;

  const std::string written = scratch.File("written.pb");
  fuzz::ExpectOk(WriteTensorFile(written, *tensor, name), "a tensor that reads writes again");
  std::string name_again;
  absl::StatusOr<Tensor> again = ReadTensorFile(written, &name_again);
  fuzz::ExpectOk(again.status(), "a written tensor reads back");
  if (name_again != name || TensorToProto(*again, name).SerializeAsString() !=
                                TensorToProto(*tensor, name).SerializeAsString()) {
    fuzz::PropertyFailed("a written tensor reads back unchanged", name);
  }
  return 0;
}
