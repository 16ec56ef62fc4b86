// The native part of the Python module (python/ovfix/__init__.py): the C++ API
// (include/ovfix/ovfix.h) with models and tensors as serialized ONNX protos (bytes), which
// the Python side turns into onnx.ModelProto and numpy arrays.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

// os.fspath(value) for a path-like, else str(value): a text of an option.
std::string Text(const py::handle& value) {
  if (py::isinstance<py::str>(value)) return py::cast<std::string>(value);
  if (py::hasattr(value, "__fspath__")) {
    return py::cast<std::string>(py::module_::import("os").attr("fspath")(value));
  }
  if (py::isinstance<py::bool_>(value)) return py::cast<bool>(value) ? "true" : "false";
  return py::cast<std::string>(py::str(value));
}

// A Python value of the table's `type` (ovfix::OptionInfo) as the texts ovfix::SetOption
// takes: bool True/False; int and number as written; a list (list, map) one text per item; a
// map's dict {name: value} as NAME=VALUE, a sequence value (dims) joined by 'x'.
std::vector<std::string> OptionTexts(const ovfix::OptionInfo& option, const py::handle& value) {
  const auto wrong = [&](const char* expected) {
    return OvfixError(option.name + ": expected " + expected + ", got " +
                      py::cast<std::string>(py::type::of(value).attr("__name__")));
  };
  const bool is_bool = py::isinstance<py::bool_>(value);
  if (option.type == "bool") {
    if (!is_bool) throw wrong("True or False");
    return {Text(value)};
  }
  if (option.type == "int") {
    if (is_bool || !py::hasattr(value, "__index__")) throw wrong("an int");
    return {std::to_string(py::cast<int64_t>(value))};
  }
  if (option.type == "number") {
    if (is_bool || !py::hasattr(value, "__float__")) throw wrong("a number");
    return {Text(py::repr(py::float_(py::reinterpret_borrow<py::object>(value))))};
  }
  if (option.type != "list" && option.type != "map") return {Text(value)};
  if (py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__")) return {Text(value)};
  std::vector<std::string> texts;
  if (option.type == "map" && py::isinstance<py::dict>(value)) {
    for (const auto& [key, item] : py::cast<py::dict>(value)) {
      std::string text = Text(key) + "=";
      if (py::isinstance<py::str>(item) || !py::isinstance<py::sequence>(item)) {
        text += Text(item);
      } else {
        for (size_t i = 0; i < py::len(item); ++i) {
          text += (i ? "x" : "") + Text(py::cast<py::sequence>(item)[i]);
        }
      }
      texts.push_back(std::move(text));
    }
    return texts;
  }
  if (!py::isinstance<py::iterable>(value)) throw wrong("a str or a list of them");
  for (const py::handle item : value) texts.push_back(Text(item));
  return texts;
}

// The keyword options of ovfix.convert: every option of the table by its name
// (ovfix::ConversionOptionList), set by ovfix::SetOption as the command line sets its flag,
// and the two the Python side passes itself: calibration_sets (calibration= arrays) and
// report (a report file). A name none of them has is an error naming it.
ovfix::ConversionOptions OptionsFromDict(const py::dict& d) {
  static const std::vector<ovfix::OptionInfo> table = ovfix::ConversionOptionList();
  ovfix::ConversionOptions o;
  for (const auto& [key, value] : d) {
    const std::string name = py::cast<std::string>(key);
    if (value.is_none()) continue;
    if (name == "calibration_sets") {
      for (const py::handle set : value)
        o.calibration_sets.push_back(TensorsFromBytes(py::cast<py::dict>(set)));
      continue;
    }
    if (name == "report") {
      o.report_path = Text(value);
      continue;
    }
    auto option = std::find_if(table.begin(), table.end(),
                               [&](const ovfix::OptionInfo& i) { return i.name == name; });
    // An unknown name: SetOption's message names it, the closest and the options.
    const std::vector<std::string> texts =
        option == table.end() ? std::vector<std::string>{""} : OptionTexts(*option, value);
    for (const std::string& text : texts) {
      if (absl::Status s = ovfix::SetOption(o, name, text); !s.ok()) {
        throw OvfixError(std::string(s.message()));
      }
    }
  }
  return o;
}

// {key: value} of the pairs given, for the report's dicts.
py::dict Dict(std::initializer_list<std::pair<const char*, py::object>> items) {
  py::dict d;
  for (const auto& [key, value] : items) d[key] = value;
  return d;
}

py::dict ReportToDict(const ovfix::ConversionReport& r) {
  py::list steps;
  for (const ovfix::StepSummary& s : r.steps) {
    steps.append(Dict({{"name", py::cast(s.name)},
                       {"rewrites", py::cast(s.rewrites)},
                       {"rolled_back", py::cast(s.rolled_back)}}));
  }
  return Dict({{"target", py::cast(r.target)},
               {"outputs_match", py::cast(r.outputs_match)},
               {"validated", py::cast(r.validated)},
               {"validation_note", py::cast(r.validation_note)},
               {"calibration", py::cast(r.calibration)},
               {"end_to_end_error", py::cast(r.end_to_end_error)},
               {"tolerance", py::cast(r.tolerance)},
               {"rewrites", py::cast(r.rewrites)},
               {"fp32_nodes_kept", py::cast(r.fp32_nodes_kept)},
               {"repaired_nodes", py::cast(r.repaired_nodes)},
               {"steps", steps},
               {"written", py::cast(r.written)},
               {"seconds", py::cast(r.seconds)},
               {"json", py::cast(r.json)}});
}

py::dict ComparisonToDict(const ovfix::Comparison& c) {
  py::dict outputs;
  for (const ovfix::OutputComparison& o : c.outputs) {
    outputs[py::str(o.name)] = Dict({{"relative_error", py::cast(o.relative_error)},
                                     {"max_abs_error", py::cast(o.max_abs_error)},
                                     {"within_tolerance", py::cast(o.within_tolerance)}});
  }
  return Dict({{"outputs_match", py::cast(c.outputs_match)},
               {"tolerance", py::cast(c.tolerance)},
               {"outputs", outputs}});
}

// The table's options for the Python side's docstring and keyword check.
py::list OptionList() {
  py::list list;
  for (const ovfix::OptionInfo& i : ovfix::ConversionOptionList()) {
    list.append(Dict({{"name", py::cast(i.name)},
                      {"flag", py::cast(i.flag)},
                      {"type", py::cast(i.type)},
                      {"choices", py::cast(i.choices)},
                      {"default", py::cast(i.default_value)},
                      {"value_name", py::cast(i.value_name)},
                      {"help", py::cast(i.help)}}));
  }
  return list;
}

// Calls `call` (the C++ API) without the GIL and returns its value, raising ovfix.Error for
// an error status.
template <typename Call>
auto WithoutGil(Call&& call) {
  auto result = [&] {
    py::gil_scoped_release release;
    return call();
  }();
  return Value(std::move(result));
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
  m.def("options", OptionList);
  m.def("convert_file", [](const std::string& input, const std::string& output, py::dict options) {
    const ovfix::ConversionOptions o = OptionsFromDict(options);
    return ReportToDict(WithoutGil([&] { return ovfix::ConvertFile(input, output, o); }));
  });
  m.def("convert_bytes", [](py::bytes model, py::dict options) {
    const onnx::ModelProto proto = ModelFromBytes(model);
    const ovfix::ConversionOptions o = OptionsFromDict(options);
    const ovfix::ConvertedModel c = WithoutGil([&] { return ovfix::Convert(proto, o); });
    return py::make_tuple(py::bytes(c.model.SerializeAsString()), ReportToDict(c.report));
  });
  m.def("load_bytes", [](const std::string& path) {
    return py::bytes(Value(ovfix::LoadModelProto(path)).SerializeAsString());
  });
  m.def("run", [](py::bytes model, py::dict inputs, const std::string& backend,
                  const std::string& precision) {
    const onnx::ModelProto proto = ModelFromBytes(model);
    const ovfix::NamedTensors feeds = TensorsFromBytes(inputs);
    return TensorsToBytes(
        WithoutGil([&] { return ovfix::Run(proto, feeds, Backend(backend, precision)); }));
  });
  m.def("compare_models",
        [](py::bytes reference, py::bytes candidate, py::dict inputs, double tolerance,
           const std::string& backend, const std::string& precision) {
          const onnx::ModelProto a = ModelFromBytes(reference), b = ModelFromBytes(candidate);
          const ovfix::NamedTensors feeds = TensorsFromBytes(inputs);
          return ComparisonToDict(WithoutGil([&] {
            return ovfix::CompareModels(a, b, feeds, tolerance, Backend(backend, precision));
          }));
        });
  m.def("compare_backends", [](py::bytes model, const std::string& ref_backend,
                               const std::string& ref_precision, const std::string& backend,
                               const std::string& precision, py::dict inputs, double tolerance) {
    const onnx::ModelProto proto = ModelFromBytes(model);
    const ovfix::NamedTensors feeds = TensorsFromBytes(inputs);
    return ComparisonToDict(WithoutGil([&] {
      return ovfix::CompareBackends(proto, Backend(ref_backend, ref_precision),
                                    Backend(backend, precision), feeds, tolerance);
    }));
  });
}
