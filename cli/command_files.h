// The files one command reads and writes, checked before it writes anything: no output may
// replace a file the command reads (a model, its external data, rule files, inputs) or
// another of its outputs, whatever the spelling of the paths (dots, links, hard links). An
// output that is a symbolic link is refused unless it is written in place; then the writer
// writes through the link to the file it leads to (ir/atomic_file.h).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/model.h"

namespace ovfix::converter {

// The folder of one set in an ONNX test-data folder, for commands that run one set: the
// folder itself when it holds input_K.pb or output_K.pb, else its first test_data_set_*/ in
// name order (the forms `convert --calibration-data` reads); the folder as given when it has
// neither. `sets` (when not null) gets how many sets it holds.
std::string FirstTestDataSet(const std::string& folder, int* sets = nullptr);

class CommandFiles {
 public:
  // `what` names the file in messages: "the input model", "--rules".
  void Read(const std::string& path, const std::string& what);
  // A model file and the external data files it was loaded from.
  void ReadModel(const std::string& path, const Model& model, const std::string& what);
  // The tensor files of an ONNX test-data folder: FOLDER/*.pb, FOLDER/test_data_set_*/*.pb.
  void ReadTestData(const std::string& folder, const std::string& what);
  // An output. Its folder must exist and be writable (`makes_folder`: the command creates
  // it, and the nearest folder above it that exists must be writable), and it must not be a
  // folder itself: checked before the command does any work.
  void Write(const std::string& path, const std::string& what, bool makes_folder = false);
  // An output that may replace the files in `replaces` (--in-place), and is written through
  // a symbolic link.
  void WriteInPlace(const std::string& path, const std::string& what,
                    const std::vector<std::string>& replaces);

  // OK, or InvalidArgument naming the output and what it would overwrite or why it cannot be
  // written, in one line.
  absl::Status Check() const;

 private:
  struct File {
    std::string path, what;
  };
  struct Output {
    File file;
    bool in_place = false;
    std::vector<std::string> replaces;
    bool makes_folder = false;
  };
  std::vector<File> reads_;
  std::vector<Output> writes_;
};

}  // namespace ovfix::converter
