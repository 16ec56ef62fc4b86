// `ovfix convert --target gpu-fp16` of generated transformer-like models with external data
// (1 and 4 GiB of float weights by default), beside two peers measured in the same run:
// python onnx's plain load + save of the same model (when /usr/bin/python3 has onnx) and a
// plain copy of the same data file, the machine's limit for reading and writing those bytes
// from page cache. Each measure is a child process whose anonymous memory (RssAnon) is
// sampled every millisecond; rounds are interleaved so machine load hits all alike.
// Targets: time <= 0.2x python onnx validated, 0.35x with --no-validate; peak anonymous memory <
// 768 MB + the largest tensor, with and without validation.
//
//   build/bench/ovfix_bench_large_model      (OVFIX_BENCH_SIZES_GB=1,4 sets the sizes;
//                                             OVFIX_BENCH_REPEATS=3 the rounds; the models
//                                             go to $TMPDIR, which needs about 2.6x the
//                                             largest size free;
//                                             OVFIX_BENCH_MODEL_DIR=DIR keeps them in DIR
//                                             for the next run)
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/support/child_memory.h"
#include "tests/support/transformer_model.h"

namespace fs = std::filesystem;

namespace ovfix::bench {
namespace {

constexpr double kGB = 1 << 30;
constexpr double kMB = 1 << 20;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "bench: %s failed\n", what.c_str());
    std::exit(1);
  }
}

// The peer for the machine's limit: the data file read and written again through a 4 MB
// buffer, as `cp` does.
void CopyFile(const std::string& from, const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY);
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Check(in >= 0 && out >= 0, "open for copy");
  std::vector<char> buffer(4 << 20);
  ssize_t n;
  while ((n = ::read(in, buffer.data(), buffer.size())) > 0) {
    Check(::write(out, buffer.data(), static_cast<size_t>(n)) == n, "write copy");
  }
  ::close(in);
  ::close(out);
}

// Reads a file to its end (into the page cache), through a 4 MB buffer.
void ReadThrough(const std::string& path) {
  const int in = ::open(path.c_str(), O_RDONLY);
  Check(in >= 0, "open " + path);
  std::vector<char> buffer(4 << 20);
  while (::read(in, buffer.data(), buffer.size()) > 0) {
  }
  ::close(in);
}

bool PythonOnnxPresent() {
  return std::system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") == 0;
}

struct Measure {
  std::string name;
  std::vector<double> seconds;
  int64_t peak_anonymous = 0;
  int64_t peak_resident = 0;
  double Median() const {
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    return s.empty() ? -1 : s[s.size() / 2];
  }
  void Add(const testing::ChildRun& run) {
    Check(run.exit_code == 0, name + ":\n" + run.output);
    seconds.push_back(run.seconds);
    peak_anonymous = std::max(peak_anonymous, run.peak_anonymous_bytes);
    peak_resident = std::max(peak_resident, run.peak_resident_bytes);
  }
};

void BenchSize(double gigabytes, int repeats, const fs::path& dir, bool python, bool keep) {
  // python onnx holds every weight in memory: past half of this machine's memory it would
  // only measure swapping or be killed.
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  if (python && gigabytes * kGB > memory / 2) {
    std::printf("\npython onnx skipped at %.0f GB: more than half of the machine's memory\n",
                gigabytes);
    python = false;
  }
  // Blocks of two 2048 x 2048 weights (16 MB each), as many as the size asks.
  testing::TransformerSpec spec;
  spec.width = 2048;
  spec.blocks = std::max(1, static_cast<int>(gigabytes * kGB / (2.0 * 2048 * 2048 * 4) + 0.5));
  const std::string model = (dir / "model.onnx").string();
  // A kept model of this size from an earlier run is used again (generating 4 GB takes
  // minutes): its data file's size says it is the same model.
  const bool kept = keep && fs::exists(model) && fs::exists(model + ".data") &&
                    static_cast<double>(fs::file_size(model + ".data")) >=
                        static_cast<double>(testing::TransformerWeightBytes(spec));
  if (kept) {
    std::printf("\nusing the model kept in %s\n", dir.c_str());
  } else {
    std::printf("\ngenerating %d blocks, %.2f GB of weights in %s ...\n", spec.blocks,
                testing::TransformerWeightBytes(spec) / kGB, dir.c_str());
    Check(testing::WriteTransformerModel(model, spec).ok(), "generate");
  }
  const double data_bytes = static_cast<double>(fs::file_size(model + ".data"));
  // Both sides are measured from a warm page cache: the model is read once before the rounds.
  for (const std::string& file : {model, model + ".data"}) ReadThrough(file);
  const std::string out = (dir / "out.onnx").string();

  Measure validated{"ovfix convert --target gpu-fp16", {}};
  Measure unvalidated{"ovfix convert --target gpu-fp16 --no-validate", {}};
  Measure python_peer{"python onnx load + save", {}};
  Measure copy{"plain copy of the data file", {}};
  const std::string script =
      absl::StrCat("import onnx; m = onnx.load('", model, "'); onnx.save(m, '", out,
                   "', save_as_external_data=True, location='out.onnx.data')");
  // Each measure writes a new output (none is there to replace: python's save appends to an
  // existing data file, and freeing the one before costs whoever replaces it), and starts
  // with no dirty pages left by the one before it (sync), so that none pays for another's
  // writeback; the page cache stays warm.
  auto fresh = [&out] {
    fs::remove(out);
    fs::remove(out + ".data");
    ::sync();
  };
  for (int round = 0; round < repeats; ++round) {
    fresh();
    validated.Add(
        testing::RunWatchingMemory({OVFIX_BINARY, "convert", model, out, "--target", "gpu-fp16"}));
    fresh();
    unvalidated.Add(testing::RunWatchingMemory(
        {OVFIX_BINARY, "convert", model, out, "--target", "gpu-fp16", "--no-validate"}));
    if (python) {
      fresh();
      python_peer.Add(testing::RunWatchingMemory({"/usr/bin/python3", "-c", script}));
    }
    fresh();
    const auto t0 = std::chrono::steady_clock::now();
    CopyFile(model + ".data", out + ".copy");
    copy.seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    fs::remove(out + ".copy");
  }
  const double largest = spec.width * spec.width * 4.0;
  const double bound = 768 * kMB + largest;
  std::printf("%-48s %9s %9s %11s %11s  %s\n", "measure (median of rounds)", "seconds", "GB/s",
              "anon MB", "VmHWM MB", "rounds (s)");
  for (const Measure* m : {&validated, &unvalidated, &python_peer, &copy}) {
    if (m->seconds.empty()) continue;
    std::printf("%-48s %9.2f %9.2f %11.0f %11.0f  %s\n", m->name.c_str(), m->Median(),
                data_bytes / kGB / m->Median(), m->peak_anonymous / kMB, m->peak_resident / kMB,
                absl::StrJoin(m->seconds, " ", [](std::string* out, double s) {
                  absl::StrAppendFormat(out, "%.2f", s);
                }).c_str());
  }
  std::printf(
      "GB/s: GB of float weights read per second (a copy also writes them all; a "
      "conversion writes half)\n");
  auto row = [](const char* what, double ours, double peer, double target) {
    std::printf("  %-58s %8.2f %s (target %s %.2f)\n", what, ours / peer,
                ours / peer <= target ? "ok" : "MISSED", "<=", target);
  };
  if (python) {
    row("time, validated conversion / python onnx load+save", validated.Median(),
        python_peer.Median(), 0.2);
    row("time, --no-validate conversion / python onnx load+save", unvalidated.Median(),
        python_peer.Median(), 0.35);
  } else {
    std::printf("  python onnx not found: no time ratio\n");
  }
  row("time, --no-validate conversion / plain copy (no target)", unvalidated.Median(),
      copy.Median(), 1e9);
  row("peak anonymous MB, validated / (768 MB + largest tensor)",
      static_cast<double>(validated.peak_anonymous), bound, 1.0);
  row("peak anonymous MB, --no-validate / (768 MB + largest tensor)",
      static_cast<double>(unvalidated.peak_anonymous), bound, 1.0);
  if (!keep) {
    fs::remove(model);
    fs::remove(model + ".data");
  }
  fs::remove(out);
  fs::remove(out + ".data");
}

}  // namespace
}  // namespace ovfix::bench

int main() {
  using namespace ovfix::bench;
  std::vector<double> sizes = {1, 4};
  if (const char* env = std::getenv("OVFIX_BENCH_SIZES_GB")) {
    sizes.clear();
    for (absl::string_view s : absl::StrSplit(env, ',')) {
      double gb;
      if (absl::SimpleAtod(s, &gb) && gb > 0) sizes.push_back(gb);
    }
  }
  const char* repeats_env = std::getenv("OVFIX_BENCH_REPEATS");
  const int repeats = repeats_env != nullptr ? std::max(1, std::atoi(repeats_env)) : 3;
  const bool python = PythonOnnxPresent();
  // OVFIX_BENCH_MODEL_DIR keeps the generated models there for the next run.
  const char* keep_dir = std::getenv("OVFIX_BENCH_MODEL_DIR");
  const bool keep = keep_dir != nullptr && *keep_dir != '\0';
  const fs::path dir =
      keep ? fs::path(keep_dir)
           : fs::temp_directory_path() / ("ovfix_bench_large_" + std::to_string(::getpid()));
  for (double gb : sizes) {
    // One folder per size when kept, so that each size finds its own model.
    const fs::path size_dir = keep ? dir / absl::StrCat(gb, "gb") : dir;
    fs::create_directories(size_dir);
    BenchSize(gb, repeats, size_dir, python, keep);
  }
  if (!keep) fs::remove_all(dir);
  return 0;
}
