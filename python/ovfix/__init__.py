"""ovfix: rewrite ONNX models so they run correctly on GPU and fp16 backends (docs/python.md).

    import ovfix
    model, report = ovfix.convert("model.onnx", target="gpu-fp16", calibration="test_data/")
    outputs = ovfix.run(model, {"x": numpy_array})
    ovfix.compare("model.onnx", model, {"x": numpy_array})["outputs_match"]

Errors raise ovfix.Error (a ValueError) with a one-line message naming the file or option.
"""

import os

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
            options.setdefault("calibration_sets", []).append(_tensors_bytes(item))
        else:
            options.setdefault("calibration_data", []).append(os.fspath(item))


def convert(model, target="gpu-fp16", calibration=None, output=None, **options):
    """Converts `model` (a path, an onnx.ModelProto or bytes) for `target`.

    Options are `ovfix convert`'s, with underscores: batch, input_shapes={"x": [1, 3, 224, 224]},
    keep_fp32, keep_io_types, broadcast, lower_conv3d_unit_kernel, rules, disable, tolerance,
    validate, repair, report (a report file). Returns (model, report): the converted
    onnx.ModelProto, or `output` when given (a path, written as `ovfix convert` writes it), and
    the report as a dict. A conversion that changes the outputs beyond the tolerance raises
    ovfix.Error and writes nothing.
    """
    options = dict(options, target=target)
    _calibration(calibration, options)
    if output is not None:
        if not isinstance(model, (str, os.PathLike)):
            source = _model_bytes(model)
            converted, report = _ovfix.convert_bytes(source, options)
            with open(output, "wb") as f:
                f.write(converted)
            return os.fspath(output), report
        report = _ovfix.convert_file(os.fspath(model), os.fspath(output), options)
        if not report["outputs_match"]:
            raise Error(report["validation_note"])
        return os.fspath(output), report
    converted, report = _ovfix.convert_bytes(_model_bytes(model), options)
    proto = onnx.ModelProto()
    proto.ParseFromString(converted)
    return proto, report


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
