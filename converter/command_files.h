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

class CommandFiles {
 public:
  // `what` names the file in messages: "the input model", "--rules".
  void Read(const std::string& path, const std::string& what);
  // A model file and the external data files it was loaded from.
  void ReadModel(const std::string& path, const Model& model, const std::string& what);
  // The tensor files of an ONNX test-data folder: FOLDER/*.pb, FOLDER/test_data_set_*/*.pb.
  void ReadTestData(const std::string& folder, const std::string& what);
  void Write(const std::string& path, const std::string& what);
  // An output that may replace the files in `replaces` (--in-place), and is written through
  // a symbolic link.
  void WriteInPlace(const std::string& path, const std::string& what,
                    const std::vector<std::string>& replaces);

  // OK, or InvalidArgument naming the output and what it would overwrite, in one line.
  absl::Status Check() const;

 private:
  struct File {
    std::string path, what;
  };
  struct Output {
    File file;
    bool in_place = false;
    std::vector<std::string> replaces;
  };
  std::vector<File> reads_;
  std::vector<Output> writes_;
};

}  // namespace ovfix::converter
