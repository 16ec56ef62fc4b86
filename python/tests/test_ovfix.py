"""The Python module (docs/python.md) against independent references: numpy for a hand-built
model, the test data's expected outputs, and the command line's bytes for conversions.

Run by ctest (library.python) with PYTHONPATH at the build tree's python/ folder;
OVFIX_BINARY is the ovfix binary, OVFIX_TEST_MODEL a folder with model.onnx and
test_data_set_0/.
"""

import glob
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper, TensorProto

import ovfix

BINARY = os.environ.get("OVFIX_BINARY", "")
MODEL_DIR = os.environ.get("OVFIX_TEST_MODEL", "")
MODEL = os.path.join(MODEL_DIR, "model.onnx")
DATA = os.path.join(MODEL_DIR, "test_data_set_0")
needs_model = pytest.mark.skipif(not os.path.isfile(MODEL) or not os.path.isfile(BINARY),
                                 reason="no shared test model or ovfix binary")


def add_relu_model():
    """y = relu(x + b), z = x * 2: small enough to compute with numpy."""
    b = numpy_helper.from_array(np.array([-1.0, 0.5, 2.0], dtype=np.float32), "b")
    two = numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"]),
         helper.make_node("Mul", ["x", "two"], ["z"])],
        "add_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
        [b, two])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def cli_convert(tmp_path, *args):
    out = str(tmp_path / "cli.onnx")
    subprocess.run([BINARY, "convert", MODEL, out, "--quiet", *args], check=True)
    with open(out, "rb") as f:
        return f.read()


def test_run_matches_numpy():
    x = np.array([[0.5, -1.0, -3.0], [2.0, 0.0, 1.0]], dtype=np.float32)
    outputs = ovfix.run(add_relu_model(), {"x": x})
    assert sorted(outputs) == ["y", "z"]
    np.testing.assert_array_equal(outputs["y"], np.maximum(x + [-1.0, 0.5, 2.0], 0))
    np.testing.assert_array_equal(outputs["z"], x * 2)
    assert outputs["y"].dtype == np.float32


@needs_model
def test_run_matches_test_data():
    model = onnx.load(MODEL)
    inputs = [i.name for i in model.graph.input
              if i.name not in {t.name for t in model.graph.initializer}]
    feeds = {}
    for k, name in enumerate(inputs):
        feeds[name] = numpy_helper.to_array(onnx.load_tensor(os.path.join(DATA, f"input_{k}.pb")))
    outputs = ovfix.run(MODEL, feeds)
    for k, out in enumerate(model.graph.output):
        expected = numpy_helper.to_array(onnx.load_tensor(os.path.join(DATA, f"output_{k}.pb")))
        np.testing.assert_allclose(outputs[out.name], expected, rtol=1e-3, atol=1e-5)


@needs_model
def test_convert_gives_the_command_lines_bytes(tmp_path):
    expected = cli_convert(tmp_path, "--target", "gpu-fp16", "--calibration-data", DATA)
    model, report = ovfix.convert(MODEL, target="gpu-fp16", calibration=DATA)
    assert isinstance(model, onnx.ModelProto)
    assert model.SerializeToString() == expected
    assert report["outputs_match"] and report["validated"]
    assert report["target"] == "gpu-fp16"
    assert report["end_to_end_error"] <= report["tolerance"]
    # Written to a path, from a path or from a ModelProto: the same bytes.
    path, _ = ovfix.convert(MODEL, target="gpu-fp16", calibration=DATA,
                            output=str(tmp_path / "py.onnx"))
    with open(path, "rb") as f:
        assert f.read() == expected
    path, _ = ovfix.convert(onnx.load(MODEL), target="gpu-fp16", calibration=DATA,
                            output=str(tmp_path / "py2.onnx"))
    with open(path, "rb") as f:
        assert f.read() == expected


@needs_model
def test_calibration_arrays_are_the_command_lines_input_files(tmp_path):
    model = onnx.load(MODEL)
    initializers = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    files = sorted(glob.glob(os.path.join(DATA, "input_*.pb")))
    arrays = {n: numpy_helper.to_array(onnx.load_tensor(f)) for n, f in zip(names, files)}
    args = []
    for n, f in zip(names, files):
        args += ["--input", f"{n}={f}"]
    expected = cli_convert(tmp_path, "--target", "gpu-fp16", "--tolerance", "0.05", *args)
    converted, report = ovfix.convert(MODEL, target="gpu-fp16", calibration=arrays,
                                      tolerance=0.05)
    assert converted.SerializeToString() == expected
    assert report["tolerance"] == pytest.approx(0.05)


@needs_model
def test_precision_on_any_target_gives_the_command_lines_bytes(tmp_path):
    expected = cli_convert(tmp_path, "--target", "tensorrt", "--precision", "fp16",
                           "--keep-io-types", "--calibration-data", DATA)
    model, report = ovfix.convert(MODEL, target="tensorrt", precision="fp16", keep_io_types=True,
                                  calibration=DATA)
    assert model.SerializeToString() == expected
    assert any(s["name"] == "fp16_islands" for s in report["steps"])
    with pytest.raises(ovfix.Error, match="target openvino-gpu runs every tensor in the float type"):
        ovfix.convert(MODEL, target="openvino-gpu", precision="bf16", calibration=DATA)


def test_options_reach_the_pipeline():
    model, report = ovfix.convert(add_relu_model(), target="generic", validate=False)
    assert not report["validated"]
    y = ovfix.run(model, {"x": np.ones((2, 3), np.float32)})["y"]
    np.testing.assert_array_equal(y, np.maximum(1 + np.array([[-1.0, 0.5, 2.0]] * 2), 0))


def test_compare_models_and_backends():
    model = add_relu_model()
    same = ovfix.compare(model, model)
    assert same["outputs_match"]
    assert same["outputs"]["y"]["relative_error"] == 0
    changed = onnx.ModelProto()
    changed.CopyFrom(model)
    changed.graph.node[2].op_type = "Add"  # z = x + 2 instead of x * 2
    x = np.full((2, 3), 3.0, np.float32)  # x * 2 and x + 2 differ by 1 everywhere
    diff = ovfix.compare(model, changed, {"x": x})
    assert not diff["outputs_match"]
    assert diff["outputs"]["y"]["within_tolerance"]
    assert diff["outputs"]["z"]["max_abs_error"] == pytest.approx(1.0)
    backends = ovfix.compare(model, backend="cpu", precision="fp16-storage", tolerance=1e-2)
    assert backends["outputs_match"]


def test_errors_raise_with_the_one_line_message(tmp_path):
    missing = str(tmp_path / "missing.onnx")
    with pytest.raises(ovfix.Error) as e:
        ovfix.convert(missing)
    assert missing in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ovfix.Error, match="unknown option 'no_such_option'"):
        ovfix.convert(add_relu_model(), no_such_option=1)
    with pytest.raises(ovfix.Error, match="nope"):
        ovfix.convert(add_relu_model(), target="nope")
    with pytest.raises(ovfix.Error, match="x"):
        ovfix.run(add_relu_model(), {"x": np.ones((5, 7), np.float32)})
