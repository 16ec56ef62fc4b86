// The native part of the Python module (python/ovfix/__init__.py): the C++ API
// (include/ovfix/ovfix.h) with models and tensors as serialized ONNX protos (bytes), which
// the Python side turns into onnx.ModelProto and numpy arrays.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>

#include "ovfix/ovfix.h"

namespace py = pybind11;

namespace {

// Raised as ovfix.Error, with the API's one-line message.
struct OvfixError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename T>
T Value(absl::StatusOr<T> result) {
  if (!result.ok()) throw OvfixError(std::string(result.status().message()));
  return *std::move(result);
}

ovfix::NamedTensors TensorsFromBytes(const py::dict& tensors) {
  ovfix::NamedTensors named;
  for (const auto& [key, value] : tensors) {
    const std::string name = py::cast<std::string>(key);
    if (!named[name].ParseFromString(py::cast<std::string>(value))) {
      throw OvfixError("input " + name + ": not a serialized onnx.TensorProto");
    }
  }
  return named;
}

py::dict TensorsToBytes(const ovfix::NamedTensors& tensors) {
  py::dict out;
  for (const auto& [name, tensor] : tensors)
    out[py::str(name)] = py::bytes(tensor.SerializeAsString());
  return out;
}

onnx::ModelProto ModelFromBytes(const std::string& bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) throw OvfixError("not a serialized onnx.ModelProto");
  return model;
}

template <typename T>
std::vector<T> List(const py::handle& value) {
  if (py::isinstance<py::str>(value)) return {py::cast<T>(value)};
  return py::cast<std::vector<T>>(value);
}

// The keyword options of ovfix.convert, as the command line names them (underscores for
// dashes); an unknown name is an error naming it.
ovfix::ConversionOptions OptionsFromDict(const py::dict& d) {
  ovfix::ConversionOptions o;
  for (const auto& [key, value] : d) {
    const std::string name = py::cast<std::string>(key);
    if (value.is_none()) continue;
    if (name == "target") {
      o.target = py::cast<std::string>(value);
    } else if (name == "batch") {
      o.batch = py::cast<int64_t>(value);
    } else if (name == "input_shapes") {
      o.input_shapes = py::cast<std::map<std::string, std::vector<int64_t>>>(value);
    } else if (name == "keep_fp32") {
      o.keep_fp32 = List<std::string>(value);
    } else if (name == "keep_io_types") {
      o.keep_io_types = py::cast<bool>(value);
    } else if (name == "broadcast") {
      o.broadcast = py::cast<std::string>(value);
    } else if (name == "lower_conv3d_unit_kernel") {
      o.lower_conv3d_unit_kernel = py::cast<bool>(value);
    } else if (name == "precision") {
      o.precision = py::cast<std::string>(value);
    } else if (name == "fp16_islands") {
      o.fp16_islands = py::cast<std::string>(value);
    } else if (name == "fp16_magnitude_threshold") {
      o.fp16_magnitude_threshold = py::cast<double>(value);
    } else if (name == "fold_size_limit") {
      o.fold_size_limit = py::cast<int64_t>(value);
    } else if (name == "accuracy") {
      o.accuracy = List<std::string>(value);
    } else if (name == "rules") {
      o.rule_files = List<std::string>(value);
    } else if (name == "disable") {
      o.disable = List<std::string>(value);
    } else if (name == "tolerance") {
      o.tolerance = py::cast<double>(value);
    } else if (name == "validate") {
      o.validate = py::cast<bool>(value);
    } else if (name == "repair") {
      o.repair = py::cast<bool>(value);
    } else if (name == "calibration_data") {
      o.calibration_data = List<std::string>(value);
    } else if (name == "calibration_sets") {
      for (const py::handle set : value)
        o.calibration_sets.push_back(TensorsFromBytes(py::cast<py::dict>(set)));
    } else if (name == "report") {
      o.report_path = py::cast<std::string>(value);
    } else {
      throw OvfixError("unknown option '" + name + "'");
    }
  }
  return o;
}

py::dict ReportToDict(const ovfix::ConversionReport& r) {
  py::dict d;
  d["target"] = r.target;
  d["outputs_match"] = r.outputs_match;
  d["validated"] = r.validated;
  d["validation_note"] = r.validation_note;
  d["calibration"] = r.calibration;
  d["end_to_end_error"] = r.end_to_end_error;
  d["tolerance"] = r.tolerance;
  d["rewrites"] = r.rewrites;
  d["fp32_nodes_kept"] = r.fp32_nodes_kept;
  d["repaired_nodes"] = r.repaired_nodes;
  py::list steps;
  for (const ovfix::StepSummary& s : r.steps) {
    py::dict step;
    step["name"] = s.name;
    step["rewrites"] = s.rewrites;
    step["rolled_back"] = s.rolled_back;
    steps.append(step);
  }
  d["steps"] = steps;
  d["written"] = r.written;
  d["seconds"] = r.seconds;
  d["json"] = r.json;
  return d;
}

py::dict ComparisonToDict(const ovfix::Comparison& c) {
  py::dict d;
  d["outputs_match"] = c.outputs_match;
  d["tolerance"] = c.tolerance;
  py::dict outputs;
  for (const ovfix::OutputComparison& o : c.outputs) {
    py::dict out;
    out["relative_error"] = o.relative_error;
    out["max_abs_error"] = o.max_abs_error;
    out["within_tolerance"] = o.within_tolerance;
    outputs[py::str(o.name)] = out;
  }
  d["outputs"] = outputs;
  return d;
}

ovfix::RunOptions Backend(const std::string& backend, const std::string& precision) {
  ovfix::RunOptions o;
  o.backend = backend;
  o.precision = precision;
  return o;
}

}  // namespace

PYBIND11_MODULE(_ovfix, m) {
  m.doc() = "ovfix's native module (use the ovfix package)";
  py::register_exception<OvfixError>(m, "Error", PyExc_ValueError);
  m.def("version", [] { return std::string(ovfix::Version()); });
  m.def("convert_file", [](const std::string& input, const std::string& output, py::dict options) {
    const ovfix::ConversionOptions o = OptionsFromDict(options);
    absl::StatusOr<ovfix::ConversionReport> report;
    {
      py::gil_scoped_release release;
      report = ovfix::ConvertFile(input, output, o);
    }
    return ReportToDict(Value(std::move(report)));
  });
  m.def("convert_bytes", [](py::bytes model, py::dict options) {
    const onnx::ModelProto proto = ModelFromBytes(model);
    const ovfix::ConversionOptions o = OptionsFromDict(options);
    absl::StatusOr<ovfix::ConvertedModel> converted;
    {
      py::gil_scoped_release release;
      converted = ovfix::Convert(proto, o);
    }
    ovfix::ConvertedModel c = Value(std::move(converted));
    return py::make_tuple(py::bytes(c.model.SerializeAsString()), ReportToDict(c.report));
  });
  m.def("load_bytes", [](const std::string& path) {
    return py::bytes(Value(ovfix::LoadModelProto(path)).SerializeAsString());
  });
  m.def("run", [](py::bytes model, py::dict inputs, const std::string& backend,
                  const std::string& precision) {
    const onnx::ModelProto proto = ModelFromBytes(model);
    const ovfix::NamedTensors feeds = TensorsFromBytes(inputs);
    absl::StatusOr<ovfix::NamedTensors> outputs;
    {
      py::gil_scoped_release release;
      outputs = ovfix::Run(proto, feeds, Backend(backend, precision));
    }
    return TensorsToBytes(Value(std::move(outputs)));
  });
  m.def("compare_models",
        [](py::bytes reference, py::bytes candidate, py::dict inputs, double tolerance,
           const std::string& backend, const std::string& precision) {
          const onnx::ModelProto a = ModelFromBytes(reference), b = ModelFromBytes(candidate);
          const ovfix::NamedTensors feeds = TensorsFromBytes(inputs);
          absl::StatusOr<ovfix::Comparison> c;
          {
            py::gil_scoped_release release;
            c = ovfix::CompareModels(a, b, feeds, tolerance, Backend(backend, precision));
          }
          return ComparisonToDict(Value(std::move(c)));
        });
  m.def("compare_backends", [](py::bytes model, const std::string& ref_backend,
                               const std::string& ref_precision, const std::string& backend,
                               const std::string& precision, py::dict inputs, double tolerance) {
    const onnx::ModelProto proto = ModelFromBytes(model);
    const ovfix::NamedTensors feeds = TensorsFromBytes(inputs);
    absl::StatusOr<ovfix::Comparison> c;
    {
      py::gil_scoped_release release;
      c = ovfix::CompareBackends(proto, Backend(ref_backend, ref_precision),
                                 Backend(backend, precision), feeds, tolerance);
    }
    return ComparisonToDict(Value(std::move(c)));
  });
}
