"""ovfix: rewrite ONNX models so they run correctly on GPU and fp16 backends (docs/python.md).

    import ovfix
    model, report = ovfix.convert("model.onnx", target="gpu-fp16", calibration="test_data/")
    outputs = ovfix.run(model, {"x": numpy_array})          # a list, in the graph's order
    session = ovfix.Session(model)                          # loaded once, run many times
    ovfix.compare("model.onnx", model, {"x": numpy_array})["outputs_match"]

Errors raise subclasses of ovfix.Error with a one-line message naming the file, option or
output: AccuracyError (with the report), InvalidOptionError, InvalidModelError,
InvalidInputError, UnsupportedOpError, MissingFileError (a FileNotFoundError), FileError (an
OSError), ArgumentTypeError (a TypeError).
"""

import builtins
import collections.abc
import inspect
import os
import textwrap

import numpy as np
import onnx
from onnx import helper, numpy_helper

from . import _ovfix

__version__ = _ovfix.version()


class Error(Exception):
    """Every error of ovfix's; the message is one line naming the file, option or output."""


class InvalidOptionError(Error, ValueError):
    """A keyword option or argument with a bad value (an unknown name, a value out of range)."""


class ArgumentTypeError(InvalidOptionError, TypeError):
    """An argument or keyword option of the wrong Python type; the message names it."""


class InvalidModelError(Error, ValueError):
    """A model that does not parse or that ONNX's rules refuse."""


class InvalidInputError(Error, ValueError):
    """Inputs (or calibration arrays) that do not fit the model."""


class UnsupportedOpError(Error, NotImplementedError):
    """An op (or op version) that ovfix's executor does not implement."""


class FileError(Error, OSError):
    """A file that cannot be read or written."""


class MissingFileError(FileError, builtins.FileNotFoundError):
    """A file or folder that does not exist."""


class AccuracyError(Error):
    """The converted model's outputs miss the accuracy criteria; nothing was written.

    `report` is the conversion's report (the dict convert returns), `outputs` the failing
    outputs' verdicts and statistics by name, `failure` the first failure in one line and
    `suggestion` what to try.
    """

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report or {}
        self.outputs = {name: o for name, o in self.report.get("outputs", {}).items()
                        if not o["meets"]}
        self.failure = self.report.get("failure", message)
        self.suggestion = self.report.get("suggestion", "")


def _error(code, kind, message, report=None):
    """The ovfix exception for a status code and ovfix::ErrorKind (include/ovfix/onnx.h)."""
    if code == "type_error":
        return ArgumentTypeError(message)
    if kind == "accuracy" or report is not None:
        return AccuracyError(message, report)
    if code == "not_found":
        return MissingFileError(message)
    if code == "unimplemented":
        return UnsupportedOpError(message)
    if kind == "option":
        return InvalidOptionError(message)
    if kind == "model":
        return InvalidModelError(message)
    if code == "invalid_argument":
        return InvalidInputError(message)
    return Error(message)


def _native(call, *args):
    """`call` (the native module's), its errors raised as ovfix's exceptions."""
    try:
        return call(*args)
    except _ovfix.NativeError as e:
        raise _error(*e.args) from None


def _type_name(value):
    return type(value).__name__


def _model_bytes(model, argument="model"):
    """A path, an onnx.ModelProto or serialized bytes, as serialized bytes."""
    if isinstance(model, onnx.ModelProto):
        return model.SerializeToString()
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        return _native(_ovfix.load_bytes, os.fspath(model))
    raise ArgumentTypeError("%s: expected a path, an onnx.ModelProto or bytes, got %s"
                            % (argument, _type_name(model)))


def _tensor_proto(name, value, what="input"):
    """A numpy array (or onnx.TensorProto) as a TensorProto; other types are a TypeError that
    names the input."""
    if isinstance(value, onnx.TensorProto):
        return value
    if not isinstance(value, np.ndarray) and not np.isscalar(value):
        raise ArgumentTypeError("%s '%s': expected a numpy array or an onnx.TensorProto, got %s"
                                % (what, name, _type_name(value)))
    return numpy_helper.from_array(np.asarray(value), name)


def _feeds(tensors, argument="inputs", what="input"):
    """{name: numpy array or onnx.TensorProto} as {name: TensorProto}."""
    if tensors is None:
        return {}
    if not isinstance(tensors, collections.abc.Mapping):
        raise ArgumentTypeError("%s: expected a dict {input name: numpy array}, got %s"
                                % (argument, _type_name(tensors)))
    return {name: _tensor_proto(name, value, what) for name, value in tensors.items()}


def _tensors_bytes(tensors, argument="inputs", what="input"):
    """{name: numpy array or onnx.TensorProto} as {name: serialized TensorProto}."""
    return {name: proto.SerializeToString()
            for name, proto in _feeds(tensors, argument, what).items()}


def _calibration(calibration, options):
    """calibration: a test-data folder, a list of them, a dict of input arrays, or a list of
    such dicts (one set each)."""
    if calibration is None:
        return
    items = calibration if isinstance(calibration, (list, tuple)) else [calibration]
    for item in items:
        if isinstance(item, collections.abc.Mapping):
            key, value = "calibration_sets", _tensors_bytes(item, "calibration",
                                                            "calibration array")
        elif isinstance(item, (str, os.PathLike)):
            key, value = "calibration_data", os.fspath(item)
        else:
            raise ArgumentTypeError("calibration: expected a test-data folder, a dict of input "
                                    "arrays or a list of either, got %s" % _type_name(item))
        given = options.get(key)
        if given is None:
            given = []
        elif isinstance(given, (str, os.PathLike)):
            given = [given]
        options[key] = list(given) + [value]


def convert(model, target=None, calibration=None, output=None, report=None, **options):
    """Converts `model` (a path, an onnx.ModelProto or bytes) for `target`.

    `target` is a built-in profile or a .target file; None is the option table's default (the
    one `ovfix convert` and the C++ API take: generic).

    `calibration` is a test-data folder, a dict of input arrays, or a list of either; `report`
    a report file to write (FILE.html a page, else JSON). The keyword options are those of
    the option table below, named as there, as `ovfix convert` takes them as flags. Returns
    (model, report): the converted onnx.ModelProto, or `output` when given (a path, written as
    `ovfix convert` writes it), and the report as a dict (docs/python.md): outputs_match,
    outputs {name: statistics, criteria, checks, verdict}, islands, repair, steps, json...
    A conversion whose outputs miss the criteria raises ovfix.AccuracyError, with the report,
    and writes no model.
    """
    options = dict(options, target=target, report=report)
    _calibration(calibration, options)
    if output is not None:
        if not isinstance(output, (str, os.PathLike)):
            raise ArgumentTypeError("output: expected a path, got %s" % _type_name(output))
        if not isinstance(model, (str, os.PathLike)):
            folder = os.path.dirname(os.path.abspath(os.fspath(output)))
            if not os.path.isdir(folder):
                raise MissingFileError("%s: no such folder" % folder)
            if os.path.isdir(output):
                raise InvalidOptionError("%s: is a folder, not a file name" % os.fspath(output))
            converted, result = _native(_ovfix.convert_bytes, _model_bytes(model), options)
            try:
                with open(output, "wb") as f:
                    f.write(converted)
            except OSError as e:
                raise FileError("%s: cannot write: %s" % (os.fspath(output), e.strerror)) from None
            result["written"] = True
            return os.fspath(output), result
        result = _native(_ovfix.convert_file, os.fspath(model), os.fspath(output), options)
        if not result["outputs_match"]:
            raise AccuracyError(result["validation_note"], result)
        return os.fspath(output), result
    converted, result = _native(_ovfix.convert_bytes, _model_bytes(model), options)
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
    return _native(_ovfix.options)


def _options_doc():
    """The table's options as convert()'s docstring lists them."""
    parameters = inspect.signature(convert).parameters
    lines = ["", "    Keyword options (ovfix's option table; the command line's flag after each):", ""]
    for option in _ovfix.options():
        name, flag, default = option["name"], option["flag"], option["default"]
        value = _PYTHON_VALUES[option["type"]]
        if option["choices"]:
            value = " | ".join(repr(c) for c in option["choices"])
        if name in parameters and parameters[name].default is not None:
            default = parameters[name].default
        if flag.startswith("--no-"):
            flag = "False is " + flag
        default = ", default %s" % default if default else ""
        lines.append("    %s: %s (%s%s)" % (name, value, flag, default))
        lines += textwrap.wrap(option["help"], 92, initial_indent=" " * 8,
                               subsequent_indent=" " * 8)
    return "\n".join(lines) + "\n"


convert.__doc__ += _options_doc()


def _numpy_type(onnx_type):
    """The numpy dtype of an onnx.TensorProto.DataType (None where numpy has none)."""
    try:
        if hasattr(helper, "tensor_dtype_to_np_dtype"):
            return np.dtype(helper.tensor_dtype_to_np_dtype(onnx_type))
        return np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[onnx_type])
    except (KeyError, TypeError, ValueError):
        return None


class Session:
    """A model loaded once and run many times on numpy arrays (ovfix::ProtoSession).

        session = ovfix.Session(model, backend="cpu", precision="fp32", threads=0)
        y, z = session.run({"x": x})                 # the outputs in the graph's order
        session.run({"x": x}, names=True)            # {output name: array}, in that order

    `model` is a path, an onnx.ModelProto or bytes; `backend` cpu or opencl, `precision`
    fp32, fp16-storage or fp16 (as `ovfix run`'s), `threads` 0 for one per core. Each input
    must have the element type the graph declares: another is a TypeError naming the input
    and both types, unless `cast=True` converts it.
    """

    def __init__(self, model, backend="cpu", precision="fp32", threads=0):
        for name, value in (("backend", backend), ("precision", precision)):
            if not isinstance(value, str):
                raise ArgumentTypeError("%s: expected a str, got %s" % (name, _type_name(value)))
        if isinstance(threads, bool) or not isinstance(threads, int):
            raise ArgumentTypeError("threads: expected an int, got %s" % _type_name(threads))
        self._session = _native(_ovfix.Session, _model_bytes(model), backend, precision,
                                threads)
        self.input_names = list(self._session.input_names)
        self.output_names = list(self._session.output_names)
        self._types = dict(zip(self.input_names, self._session.input_types))

    def _feed(self, name, value, cast):
        expected = _numpy_type(self._types[name])
        if isinstance(value, onnx.TensorProto):
            if value.data_type != self._types[name] and not cast:
                raise ArgumentTypeError(
                    "input '%s': the model declares %s, got %s (cast=True converts it)"
                    % (name, expected, _numpy_type(value.data_type)))
            return value
        if not isinstance(value, np.ndarray) and not np.isscalar(value):
            raise ArgumentTypeError("input '%s': expected a numpy array or an onnx.TensorProto, "
                                    "got %s" % (name, _type_name(value)))
        value = np.asarray(value)
        if expected is not None and value.dtype != expected:
            if not cast:
                raise ArgumentTypeError(
                    "input '%s': the model declares %s, got %s (cast=True converts it)"
                    % (name, expected, value.dtype))
            value = value.astype(expected)
        return numpy_helper.from_array(value, name)

    def run(self, inputs, names=False, cast=False, output_names=None):
        """Runs the model on {input name: numpy array}. Returns the outputs as a list in the
        graph's order; with `names=True` a dict {output name: array} in that order, with
        `output_names` (a list of names) a dict of those outputs."""
        if not isinstance(inputs, collections.abc.Mapping):
            raise ArgumentTypeError("inputs: expected a dict {input name: numpy array}, got %s"
                                    % _type_name(inputs))
        feeds = {}
        for name, value in inputs.items():
            if name not in self._types:
                raise InvalidInputError("input '%s': the model has no such input (its inputs: %s)"
                                        % (name, ", ".join(self.input_names)))
            feeds[name] = self._feed(name, value, cast).SerializeToString()
        outputs = _native(self._session.run, feeds, cast)
        arrays = []
        for data in outputs:
            proto = onnx.TensorProto()
            proto.ParseFromString(data)
            arrays.append(numpy_helper.to_array(proto))
        if output_names is not None:
            if isinstance(output_names, str):
                output_names = [output_names]
            by_name = dict(zip(self.output_names, arrays))
            for name in output_names:
                if name not in by_name:
                    raise InvalidOptionError("output_names: the model has no output '%s' (its "
                                             "outputs: %s)" % (name, ", ".join(self.output_names)))
            return {name: by_name[name] for name in output_names}
        if names:
            return dict(zip(self.output_names, arrays))
        return arrays


def run(model, inputs, backend="cpu", precision="fp32", cast=False):
    """Runs `model` once on {input name: numpy array}; returns {output name: numpy array} in
    the graph's order. Session runs a model many times without loading it again; its input
    type check (and `cast`) are this call's."""
    return Session(model, backend, precision).run(inputs, names=True, cast=cast)


def compare(reference, candidate=None, inputs=None, tolerance=None, backend="cpu",
            precision="fp32", reference_backend="cpu", reference_precision="fp32",
            accuracy=None):
    """Compares two models on the same inputs (random ones, fixed seed, for inputs not given),
    or, without `candidate`, one model on two backends/precisions, and judges each output as
    `ovfix compare` does: by `accuracy` (criteria as --accuracy takes them, a str or a list),
    `tolerance` (max:X, as --tolerance), else convert's defaults for the precision involved.
    Returns a dict: outputs_match, tolerance, outputs: {name: {meets, criteria, checks,
    score, statistics, relative_error, max_abs_error, mean_error, p99_error, p99_9_error,
    share_beyond, non_finite, elements, computed, within_tolerance}} (docs/python.md).
    """
    feeds = _tensors_bytes(inputs)
    if candidate is None:
        return _native(_ovfix.compare_backends, _model_bytes(reference, "reference"),
                       reference_backend, reference_precision, backend, precision, feeds,
                       tolerance, accuracy)
    return _native(_ovfix.compare_models, _model_bytes(reference, "reference"),
                   _model_bytes(candidate, "candidate"), feeds, tolerance, backend, precision,
                   accuracy)
