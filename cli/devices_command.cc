// `ovfix devices`: the OpenCL devices this machine has, with the index that --device and
// $OVFIX_OPENCL_DEVICE take, and whether each can do half arithmetic (the fp16 precision;
// fp16-storage works everywhere).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command.h"
#include "converter/json_writer.h"
#include "exec/opencl/opencl_runtime.h"

namespace ovfix::cli {
namespace {

std::string Memory(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return absl::StrFormat("%.1f GiB", bytes / double(1ull << 30));
  return absl::StrFormat("%.0f MiB", bytes / double(1ull << 20));
}

// The device a session picks without --device: as Runtime::Create does.
int DefaultDevice(const std::vector<exec::opencl::DeviceInfo>& devices) {
  if (const char* env = std::getenv("OVFIX_OPENCL_DEVICE"); env != nullptr && *env) {
    return std::atoi(env);
  }
  for (const auto& d : devices) {
    if (d.gpu) return d.index;
  }
  return 0;
}

// The devices as one JSON object: {"devices": [...], "default": N, "error": "..."}.
int PrintJson(const absl::StatusOr<std::vector<exec::opencl::DeviceInfo>>& devices) {
  JsonWriter w;
  w.BeginObject();
  w.Key("devices").BeginArray();
  if (devices.ok()) {
    for (const auto& d : *devices) {
      std::string fp16 = d.fp16 ? "yes" : "no";
      if (!d.fp16 && d.gpu) {
        auto rt = exec::opencl::Runtime::Create(d.index);
        if (rt.ok() && (*rt)->HalfArithmetic().ok()) fp16 = "probed";
      }
      w.BeginObject();
      w.Key("index").Int(d.index);
      w.Key("name").String(d.name);
      w.Key("platform").String(d.platform);
      w.Key("type").String(d.gpu ? "GPU" : "CPU");
      w.Key("fp16").String(fp16);
      w.Key("global_memory").Int(static_cast<int64_t>(d.global_memory));
      w.Key("compute_units").Int(d.compute_units);
      w.Key("version").String(d.version);
      w.EndObject();
    }
  }
  w.EndArray();
  if (devices.ok() && !devices->empty()) w.Key("default").Int(DefaultDevice(*devices));
  if (!devices.ok()) w.Key("error").String(std::string(devices.status().message()));
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
  return kExitOk;
}

int RunDevices(bool json) {
  absl::StatusOr<std::vector<exec::opencl::DeviceInfo>> devices = exec::opencl::ListDevices();
  if (json) return PrintJson(devices);
  if (!devices.ok() || devices->empty()) {
    std::printf("no OpenCL devices found%s%s\n", devices.ok() ? "" : ": ",
                devices.ok() ? "" : std::string(devices.status().message()).c_str());
    std::printf(
        "the opencl backend needs an OpenCL driver: PoCL for the CPU "
        "(apt install pocl-opencl-icd) or the GPU vendor's\n");
    return kExitOk;
  }
  const int chosen = DefaultDevice(*devices);
  std::printf("%-3s %-36s %-28s %-4s %-6s %10s %6s  %s\n", "#", "name", "platform", "type", "fp16",
              "memory", "units", "version");
  std::vector<std::string> notes;
  for (const auto& d : *devices) {
    // A GPU without the extension string may still do half arithmetic: probe it as a fp16
    // session would.
    std::string fp16 = d.fp16 ? "yes" : "no";
    if (!d.fp16 && d.gpu) {
      auto rt = exec::opencl::Runtime::Create(d.index);
      const absl::Status half = rt.ok() ? (*rt)->HalfArithmetic() : rt.status();
      if (half.ok()) {
        fp16 = "probed";
      } else {
        notes.push_back(absl::StrCat("device ", d.index, ": ", half.message()));
      }
    }
    std::printf("%-3d %-36s %-28s %-4s %-6s %10s %6d  %s%s\n", d.index, d.name.c_str(),
                d.platform.c_str(), d.gpu ? "GPU" : "CPU", fp16.c_str(),
                Memory(d.global_memory).c_str(), d.compute_units, d.version.c_str(),
                d.index == chosen ? "  (default)" : "");
  }
  for (const auto& n : notes) std::printf("%s\n", n.c_str());
  std::printf(
      "choose one with --device N or OVFIX_OPENCL_DEVICE=N; fp16 'no' means fp16-storage only "
      "(no half arithmetic), 'probed' that the device does half arithmetic without "
      "advertising cl_khr_fp16\n");
  return kExitOk;
}

}  // namespace

Command AddDevicesCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("devices", "List the OpenCL devices, with their fp16 support");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Print the devices as one JSON object");
  return {sub, [json] { return RunDevices(*json); }};
}

}  // namespace ovfix::cli
