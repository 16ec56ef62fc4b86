// Makes the seed corpus of each fuzz target: ovfix_fuzz_seeds OUT SOURCE_DIR SHARED_DIR
// writes OUT/NAME/ for every target NAME (load_model, tensor_file, text_form, rule_file,
// convert) from the repository's rule files and golden rule tests and, when SHARED_DIR exists,
// the shared models and ONNX node tests. OUT/smoke/NAME/ is the part the ctest smoke run
// starts from: everything but the node tests and their data, of which it takes every 16th
// (replaying all of them would take the smoke run's whole budget). Models go in as files and,
// for the text-reading targets, as the ONNX text ovfix prints for them. Large files are left
// out: libFuzzer spends its time per byte, and small inputs cover the same code.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ir/model_io.h"
#include "ir/text_form.h"

namespace fs = std::filesystem;

namespace {

constexpr uintmax_t kMaxModelBytes = 256 << 10;
constexpr uintmax_t kMaxTensorBytes = 64 << 10;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class Corpora {
 public:
  explicit Corpora(fs::path root) : root_(std::move(root)) {}

  void Add(const std::string& target, const std::string& name, const std::string& bytes) {
    Write(root_ / target, name, bytes);
    ++counts_[target];
    const bool node_test = name.starts_with("onnx-node-tests_");
    if (!node_test || node_tests_seen_[target]++ % 16 == 0) {
      Write(root_ / "smoke" / target, name, bytes);
      ++counts_["smoke/" + target];
    }
  }
  void AddFile(const std::string& target, const fs::path& file, const std::string& name) {
    Add(target, name, ReadFile(file));
  }
  const std::map<std::string, int>& counts() const { return counts_; }

 private:
  static void Write(const fs::path& dir, const std::string& name, const std::string& bytes) {
    fs::create_directories(dir);
    std::ofstream(dir / name, std::ios::binary) << bytes;
  }

  fs::path root_;
  std::map<std::string, int> counts_;
  std::map<std::string, int> node_tests_seen_;
};

// "a/b/c.onnx" under `base` -> "a_b_c.onnx": unique names for files from many folders.
std::string FlatName(const fs::path& file, const fs::path& base) {
  std::string name = fs::relative(file, base).string();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  return name;
}

std::vector<fs::path> FilesUnder(const fs::path& dir, const std::string& extension,
                                 uintmax_t max_bytes) {
  std::vector<fs::path> files;
  std::error_code ignored;
  if (!fs::is_directory(dir, ignored)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ignored)) {
    if (entry.is_regular_file() && entry.path().extension() == extension &&
        entry.file_size() <= max_bytes) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The graphs of a golden rule test: the lines after each "before:" and "after:" up to the
// next "keyword:" line.
std::vector<std::string> GoldenGraphs(const std::string& text) {
  std::vector<std::string> graphs;
  std::istringstream in(text);
  std::string line, current;
  bool inside = false;
  auto keyword = [](const std::string& l) {
    const size_t colon = l.find(':');
    if (colon == std::string::npos || colon == 0) return false;
    for (size_t i = 0; i < colon; ++i) {
      if (!(std::islower(static_cast<unsigned char>(l[i])) || l[i] == '_')) return false;
    }
    return true;
  };
  auto finish = [&] {
    if (inside && !current.empty()) graphs.push_back(current);
    current.clear();
  };
  while (std::getline(in, line)) {
    if (keyword(line)) {
      finish();
      inside = line == "before:" || line == "after:";
      continue;
    }
    if (inside) current += line + "\n";
  }
  finish();
  return graphs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s OUT SOURCE_DIR SHARED_DIR\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1], source = argv[2], shared = argv[3];
  std::error_code ignored;
  fs::remove_all(out, ignored);
  Corpora corpora(out);

  // Models: the node tests (one op each), the shared real models and the example.
  std::vector<std::pair<fs::path, fs::path>> models;  // file, base for its name
  for (const fs::path& dir : {shared / "onnx-node-tests", shared / "models", source / "examples"}) {
    for (const fs::path& file : FilesUnder(dir, ".onnx", kMaxModelBytes)) {
      models.emplace_back(file, dir.parent_path());
    }
  }
  for (const auto& [file, base] : models) {
    const std::string name = FlatName(file, base);
    corpora.AddFile("load_model", file, name);
    absl::StatusOr<std::unique_ptr<ovfix::Model>> model = ovfix::LoadModel(file.string());
    if (!model.ok()) continue;
    const std::string text = ovfix::PrintModelText(**model);
    corpora.Add("text_form", name + ".txt", text);
    // Convert takes the real models as files and the node tests as text (mutations of text
    // stay well-formed models more often).
    if (name.starts_with("onnx-node-tests_")) {
      corpora.Add("convert", name + ".txt", text);
    } else {
      corpora.AddFile("convert", file, name);
    }
  }
  for (const fs::path& dir : {shared / "onnx-node-tests", shared / "models", source / "examples"}) {
    for (const fs::path& file : FilesUnder(dir, ".pb", kMaxTensorBytes)) {
      corpora.AddFile("tensor_file", file, FlatName(file, dir.parent_path()));
    }
  }

  // Rule files, and the graphs of the golden rule tests.
  for (const fs::path& dir : {source / "rules" / "builtin", source / "examples" / "rules",
                              source / "tests" / "rules" / "data"}) {
    for (const fs::path& file : FilesUnder(dir, ".rules", kMaxModelBytes)) {
      corpora.AddFile("rule_file", file, FlatName(file, source));
    }
  }
  for (const fs::path& file :
       FilesUnder(source / "tests" / "rules" / "golden", ".test", kMaxModelBytes)) {
    const std::vector<std::string> graphs = GoldenGraphs(ReadFile(file));
    for (size_t i = 0; i < graphs.size(); ++i) {
      const std::string name = file.stem().string() + "_" + std::to_string(i) + ".txt";
      corpora.Add("text_form", name, graphs[i]);
      corpora.Add("convert", name, graphs[i]);
    }
  }

  for (const auto& [target, count] : corpora.counts()) {
    std::printf("%s: %d seeds\n", target.c_str(), count);
  }
  return 0;
}
