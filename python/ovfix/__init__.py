"""ovfix: rewrite ONNX models so they run correctly on GPU and fp16 backends (docs/python.md).

    import ovfix
    model, report = ovfix.convert("model.onnx", target="gpu-fp16", calibration="test_data/")
    outputs = ovfix.run(model, {"x": numpy_array})
    ovfix.compare("model.onnx", model, {"x": numpy_array})["outputs_match"]

Errors raise ovfix.Error (a ValueError) with a one-line message naming the file or option.
"""

import inspect
import os
import textwrap

import onnx
from onnx import numpy_helper

from . import _ovfix

Error = _ovfix.Error
__version__ = _ovfix.version()


def _model_bytes(model):
    """A path, an onnx.ModelProto or serialized bytes, as serialized bytes."""
    if isinstance(model, onnx.ModelProto):
        return model.SerializeToString()
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        return _ovfix.load_bytes(os.fspath(model))
    raise TypeError("model: expected a path, an onnx.ModelProto or bytes, not %s"
                    % type(model).__name__)


def _tensors_bytes(tensors):
    """{name: numpy array or onnx.TensorProto} as {name: serialized TensorProto}."""
    out = {}
    for name, value in (tensors or {}).items():
        proto = value if isinstance(value, onnx.TensorProto) else numpy_helper.from_array(value, name)
        out[name] = proto.SerializeToString()
    return out


def _calibration(calibration, options):
    """calibration: a test-data folder, a list of them, a dict of input arrays, or a list of
    such dicts (one set each)."""
    if calibration is None:
        return
    items = calibration if isinstance(calibration, (list, tuple)) else [calibration]
    for item in items:
        if isinstance(item, dict):
            key, value = "calibration_sets", _tensors_bytes(item)
        else:
            key, value = "calibration_data", os.fspath(item)
        given = options.get(key)
        if given is None:
            given = []
        elif isinstance(given, (str, os.PathLike)):
            given = [given]
        options[key] = list(given) + [value]


def convert(model, target="gpu-fp16", calibration=None, output=None, report=None, **options):
    """Converts `model` (a path, an onnx.ModelProto or bytes) for `target`.

    `calibration` is a test-data folder, a dict of input arrays, or a list of either; `report`
    a report file to write (FILE.html a page, else JSON). The keyword options are those of
    the option table below, named as there, as `ovfix convert` takes them as flags. Returns
    (model, report): the converted onnx.ModelProto, or `output` when given (a path, written as
    `ovfix convert` writes it), and the report as a dict. A conversion that changes the
    outputs beyond the tolerance raises ovfix.Error and writes nothing.
    """
    options = dict(options, target=target, report=report)
    _calibration(calibration, options)
    if output is not None:
        if not isinstance(model, (str, os.PathLike)):
            source = _model_bytes(model)
            converted, result = _ovfix.convert_bytes(source, options)
            with open(output, "wb") as f:
                f.write(converted)
            return os.fspath(output), result
        result = _ovfix.convert_file(os.fspath(model), os.fspath(output), options)
        if not result["outputs_match"]:
            raise Error(result["validation_note"])
        return os.fspath(output), result
    converted, result = _ovfix.convert_bytes(_model_bytes(model), options)
    proto = onnx.ModelProto()
    proto.ParseFromString(converted)
    return proto, result


_PYTHON_VALUES = {
    "bool": "True or False",
    "int": "an int",
    "number": "a float",
    "choice": "a str",
    "text": "a str or path",
    "list": "a str or a list of them",
    "map": "a dict {name: value} or 'NAME=VALUE' strs",
}


def options():
    """The keyword options of convert(), from ovfix's option table: a list of dicts with
    name, flag (the command line's), type, choices, default, value_name and help."""
    return _ovfix.options()


def _options_doc():
    """The table's options as convert()'s docstring lists them."""
    parameters = inspect.signature(convert).parameters
    lines = ["", "    Keyword options (ovfix's option table; the command line's flag after each):", ""]
    for option in _ovfix.options():
        name, flag, default = option["name"], option["flag"], option["default"]
        value = _PYTHON_VALUES[option["type"]]
        if option["choices"]:
            value = " | ".join(repr(c) for c in option["choices"])
        if name in parameters:
            default = parameters[name].default
        if flag.startswith("--no-"):
            flag = "False is " + flag
        default = ", default %s" % default if default else ""
        lines.append("    %s: %s (%s%s)" % (name, value, flag, default))
        lines += textwrap.wrap(option["help"], 92, initial_indent=" " * 8,
                               subsequent_indent=" " * 8)
    return "\n".join(lines) + "\n"


convert.__doc__ += _options_doc()


def run(model, inputs, backend="cpu", precision="fp32"):
    """Runs `model` on {input name: numpy array}; returns {output name: numpy array}."""
    outputs = _ovfix.run(_model_bytes(model), _tensors_bytes(inputs), backend, precision)
    result = {}
    for name, data in outputs.items():
        proto = onnx.TensorProto()
        proto.ParseFromString(data)
        result[name] = numpy_helper.to_array(proto)
    return result


def compare(reference, candidate=None, inputs=None, tolerance=1e-4, backend="cpu",
            precision="fp32", reference_backend="cpu", reference_precision="fp32"):
    """Compares two models on the same inputs (random ones, fixed seed, for inputs not given),
    or, without `candidate`, one model on two backends/precisions. Returns a dict:
    outputs_match, tolerance, outputs: {name: {relative_error, max_abs_error, within_tolerance}}.
    """
    feeds = _tensors_bytes(inputs)
    if candidate is None:
        return _ovfix.compare_backends(_model_bytes(reference), reference_backend,
                                       reference_precision, backend, precision, feeds, tolerance)
    return _ovfix.compare_models(_model_bytes(reference), _model_bytes(candidate), feeds,
                                 tolerance, backend, precision)
