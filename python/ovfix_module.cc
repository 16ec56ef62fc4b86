// The native part of the Python module (python/ovfix/__init__.py): the C++ API over ONNX's
// protos (include/ovfix/onnx.h) with models and tensors as serialized ONNX protos (bytes),
// which the Python side turns into onnx.ModelProto and numpy arrays.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "ovfix/onnx.h"

namespace py = pybind11;

namespace {

// An error of the C++ API, raised as _ovfix.NativeError(code, kind, message, report), which
// the Python side (ovfix/__init__.py) raises as the ovfix exception for the status code and
// ovfix::ErrorKind: ovfix.MissingFileError, InvalidOptionError, AccuracyError...
struct StatusError {
  absl::Status status;
  py::object report;  // the report as a dict (a conversion that missed its criteria), or None
};

// An argument of the wrong Python type (a keyword option, compare's tolerance), raised as
// ovfix.ArgumentTypeError (a TypeError).
struct OvfixError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void Throw(absl::Status status, py::object report = py::none()) {
  throw StatusError{std::move(status), std::move(report)};
}

template <typename T>
T Value(absl::StatusOr<T> result) {
  if (!result.ok()) Throw(result.status());
  return *std::move(result);
}

// absl's name of a status code in lower case: "not_found", "invalid_argument".
std::string CodeName(absl::StatusCode code) {
  std::string name = absl::StatusCodeToString(code);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

ovfix::NamedTensorProtos TensorsFromBytes(const py::dict& tensors) {
  ovfix::NamedTensorProtos named;
  for (const auto& [key, value] : tensors) {
    const std::string name = py::cast<std::string>(key);
    if (!named[name].ParseFromString(py::cast<std::string>(value))) {
      Throw(absl::InvalidArgumentError("input '" + name + "': not a serialized onnx.TensorProto"));
    }
  }
  return named;
}

onnx::ModelProto ModelFromBytes(const std::string& bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    absl::Status s = absl::InvalidArgumentError("the model: not a serialized onnx.ModelProto");
    s.SetPayload(ovfix::kErrorKindPayload, absl::Cord("model"));
    Throw(s);
  }
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
      for (const py::handle set : value) {
        ovfix::NamedTensors tensors;
        for (auto& [name, proto] : TensorsFromBytes(py::cast<py::dict>(set))) {
          tensors[name] = Value(ovfix::ToOnnxTensor(proto));
        }
        o.calibration_sets.push_back(std::move(tensors));
      }
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
      if (absl::Status s = ovfix::SetOptionStatus(o, name, text); !s.ok()) Throw(s);
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

// One output's verdict, as ovfix::OutputComparison holds it (`ovfix compare`'s).
py::dict OutputToDict(const ovfix::OutputComparison& o) {
  py::list checks;
  for (const ovfix::CriterionCheck& c : o.checks) {
    checks.append(Dict({{"criterion", py::cast(c.criterion)},
                        {"measured", py::cast(c.measured)},
                        {"bound", py::cast(c.bound)},
                        {"meets", py::cast(c.meets)}}));
  }
  return Dict({{"computed", py::cast(o.computed)},
               {"criteria", py::cast(o.criteria)},
               {"checks", checks},
               {"score", py::cast(o.score)},
               {"meets", py::cast(o.meets)},
               {"within_tolerance", py::cast(o.within_tolerance)},
               {"elements", py::cast(o.elements)},
               {"relative_error", py::cast(o.relative_error)},
               {"max_abs_error", py::cast(o.max_abs_error)},
               {"mean_error", py::cast(o.mean_error)},
               {"p99_error", py::cast(o.p99_error)},
               {"p99_9_error", py::cast(o.p99_9_error)},
               {"share_beyond", py::cast(o.share_beyond)},
               {"non_finite", py::cast(o.non_finite)},
               {"statistics", py::cast(o.statistics)}});
}

py::dict OutputsToDict(const std::vector<ovfix::OutputComparison>& list) {
  py::dict outputs;
  for (const ovfix::OutputComparison& o : list) outputs[py::str(o.name)] = OutputToDict(o);
  return outputs;
}

py::dict ReportToDict(const ovfix::ConversionReport& r) {
  py::list steps, islands, rounds, kept;
  for (const ovfix::StepSummary& s : r.steps) {
    steps.append(Dict({{"name", py::cast(s.name)},
                       {"rewrites", py::cast(s.rewrites)},
                       {"rolled_back", py::cast(s.rolled_back)},
                       {"runs", py::cast(s.runs)},
                       {"why_not", py::cast(s.why_not)}}));
  }
  for (const ovfix::IslandSummary& i : r.islands) {
    islands.append(Dict({{"node", py::cast(i.node)},
                         {"op_type", py::cast(i.op_type)},
                         {"reason", py::cast(i.reason)}}));
  }
  for (const ovfix::RepairRoundSummary& round : r.repair_rounds) {
    rounds.append(Dict({{"round", py::cast(round.round)},
                        {"action", py::cast(round.action)},
                        {"nodes", py::cast(round.nodes)},
                        {"fp32_nodes", py::cast(round.fp32_nodes)},
                        {"fp32_share", py::cast(round.fp32_share)},
                        {"score", py::cast(round.score)},
                        {"error", py::cast(round.error)},
                        {"kept", py::cast(round.kept)}}));
  }
  for (const ovfix::RepairedNodeSummary& k : r.repaired) {
    kept.append(Dict({{"node", py::cast(k.node)},
                      {"op_type", py::cast(k.op_type)},
                      {"round", py::cast(k.round)},
                      {"error_before", py::cast(k.error_before)},
                      {"error_after", py::cast(k.error_after)}}));
  }
  return Dict({{"target", py::cast(r.target)},
               {"outputs_match", py::cast(r.outputs_match)},
               {"validated", py::cast(r.validated)},
               {"validation_note", py::cast(r.validation_note)},
               {"calibration", py::cast(r.calibration)},
               {"end_to_end_error", py::cast(r.end_to_end_error)},
               {"tolerance", py::cast(r.tolerance)},
               {"outputs", OutputsToDict(r.outputs)},
               {"failure", py::cast(r.failure)},
               {"suggestion", py::cast(r.suggestion)},
               {"rewrites", py::cast(r.rewrites)},
               {"fp32_nodes_kept", py::cast(r.fp32_nodes_kept)},
               {"islands", islands},
               {"repaired_nodes", py::cast(r.repaired_nodes)},
               {"repair", Dict({{"rounds", rounds}, {"kept", kept}})},
               {"steps", steps},
               {"warnings", py::cast(r.warnings)},
               {"written", py::cast(r.written)},
               {"seconds", py::cast(r.seconds)},
               {"json", py::cast(r.json)}});
}

py::dict ComparisonToDict(const ovfix::Comparison& c) {
  return Dict({{"outputs_match", py::cast(c.outputs_match)},
               {"tolerance", py::cast(c.tolerance)},
               {"outputs", OutputsToDict(c.outputs)}});
}

// compare()'s tolerance (None: the default criteria) and accuracy (a str or a list of them).
std::optional<double> Tolerance(const py::object& tolerance) {
  if (tolerance.is_none()) return std::nullopt;
  if (py::isinstance<py::bool_>(tolerance) || !py::hasattr(tolerance, "__float__")) {
    throw OvfixError("tolerance: expected a number, got " +
                     py::cast<std::string>(py::type::of(tolerance).attr("__name__")));
  }
  return py::cast<double>(py::float_(tolerance));
}

std::vector<std::string> Accuracy(const py::object& accuracy) {
  if (accuracy.is_none()) return {};
  if (py::isinstance<py::str>(accuracy)) return {Text(accuracy)};
  if (!py::isinstance<py::iterable>(accuracy)) {
    throw OvfixError("accuracy: expected a str or a list of them, got " +
                     py::cast<std::string>(py::type::of(accuracy).attr("__name__")));
  }
  std::vector<std::string> texts;
  for (const py::handle item : accuracy) texts.push_back(Text(item));
  return texts;
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
  // Every error as NativeError(code, kind, message, report); ovfix/__init__.py raises the
  // typed exception.
  static py::exception<StatusError> native(m, "NativeError", PyExc_Exception);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::tuple args = py::make_tuple(CodeName(e.status.code()), ovfix::ErrorKind(e.status),
                                      std::string(e.status.message()), e.report);
      PyErr_SetObject(native.ptr(), args.ptr());
    } catch (const OvfixError& e) {
      py::tuple args = py::make_tuple("type_error", "option", std::string(e.what()), py::none());
      PyErr_SetObject(native.ptr(), args.ptr());
    }
  });
  m.def("version", [] { return std::string(ovfix::Version()); });
  m.def("options", OptionList);
  m.def("convert_file", [](const std::string& input, const std::string& output, py::dict options) {
    const ovfix::ConversionOptions o = OptionsFromDict(options);
    return ReportToDict(WithoutGil([&] { return ovfix::ConvertFileStatus(input, output, o); }));
  });
  // (model bytes, report) of a conversion in memory; a conversion that missed its criteria
  // raises with the report.
  m.def("convert_bytes", [](py::bytes model, py::dict options) {
    const onnx::ModelProto proto = ModelFromBytes(model);
    const ovfix::ConversionOptions o = OptionsFromDict(options);
    ovfix::ConversionReport report;
    bool ran = false;
    absl::StatusOr<ovfix::ConvertedModelProto> c;
    {
      py::gil_scoped_release release;
      report.outputs_match = false;
      c = ovfix::Convert(proto, o, &report);
      ran = !report.json.empty();
    }
    if (!c.ok()) Throw(c.status(), ran ? py::object(ReportToDict(report)) : py::none());
    return py::make_tuple(py::bytes(c->model.SerializeAsString()), ReportToDict(c->report));
  });
  // A model loaded once (ovfix::ProtoSession), run on serialized TensorProtos.
  py::class_<ovfix::ProtoSession>(m, "Session")
      .def(py::init([](py::bytes model, const std::string& backend, const std::string& precision,
                       int threads) {
        const onnx::ModelProto proto = ModelFromBytes(model);
        ovfix::RunOptions o = Backend(backend, precision);
        o.threads = threads;
        return WithoutGil([&] { return ovfix::ProtoSession::Create(proto, o); });
      }))
      .def_property_readonly("input_names", &ovfix::ProtoSession::input_names)
      .def_property_readonly("output_names", &ovfix::ProtoSession::output_names)
      .def_property_readonly("input_types", &ovfix::ProtoSession::input_types)
      .def("run", [](ovfix::ProtoSession& session, py::dict inputs, bool cast) {
        const ovfix::NamedTensorProtos feeds = TensorsFromBytes(inputs);
        const std::vector<onnx::TensorProto> outputs =
            WithoutGil([&] { return session.Run(feeds, cast); });
        py::list list;
        for (const onnx::TensorProto& t : outputs) list.append(py::bytes(t.SerializeAsString()));
        return list;
      });
  m.def("load_bytes", [](const std::string& path) {
    return py::bytes(Value(ovfix::LoadModelProto(path)).SerializeAsString());
  });
  m.def("compare_models",
        [](py::bytes reference, py::bytes candidate, py::dict inputs, py::object tolerance,
           const std::string& backend, const std::string& precision, py::object accuracy) {
          const onnx::ModelProto a = ModelFromBytes(reference), b = ModelFromBytes(candidate);
          const ovfix::NamedTensorProtos feeds = TensorsFromBytes(inputs);
          const std::optional<double> bound = Tolerance(tolerance);
          const std::vector<std::string> criteria = Accuracy(accuracy);
          return ComparisonToDict(WithoutGil([&] {
            return ovfix::CompareModels(a, b, feeds, bound, Backend(backend, precision), criteria);
          }));
        });
  m.def("compare_backends",
        [](py::bytes model, const std::string& ref_backend, const std::string& ref_precision,
           const std::string& backend, const std::string& precision, py::dict inputs,
           py::object tolerance, py::object accuracy) {
          const onnx::ModelProto proto = ModelFromBytes(model);
          const ovfix::NamedTensorProtos feeds = TensorsFromBytes(inputs);
          const std::optional<double> bound = Tolerance(tolerance);
          const std::vector<std::string> criteria = Accuracy(accuracy);
          return ComparisonToDict(WithoutGil([&] {
            return ovfix::CompareBackends(proto, Backend(ref_backend, ref_precision),
                                          Backend(backend, precision), feeds, bound, criteria);
          }));
        });
}
