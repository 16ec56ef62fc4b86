"""The module as a user's script meets it (issue 42 points 1-5): convert with per-output
criteria, catch AccuracyError and read its statistics, run a Session many times and compare
with numpy; each kind of failure raises its own exception; the examples of docs/python.md run.

Run by ctest (library.python) with PYTHONPATH at the build tree's python/ folder.
"""

import json
import os
import re
import tempfile

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper, TensorProto

import ovfix

SOURCE_DIR = os.environ.get("OVFIX_SOURCE_DIR",
                            os.path.join(os.path.dirname(__file__), "..", ".."))
B = np.array([-1.0, 0.5, 2.0], dtype=np.float32)


def two_outputs_model():
    """z = 2x and y = relu(x + b), declared in that order (not the alphabetical one)."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["z"]), helper.make_node("Add", ["x", "b"], ["s"]),
         helper.make_node("Relu", ["s"], ["y"])],
        "two_outputs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(B, "b"),
         numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def calibration():
    return {"x": (np.random.default_rng(3).standard_normal((2, 3)) * 40).astype(np.float32)}


def no_scratch_path(text):
    """Nothing of the scratch folder the conversion in memory goes through."""
    return "ovfix-" not in text and ".pb" not in text and tempfile.gettempdir() + "/" not in text


def test_accuracy_error_names_the_output_and_criterion_and_carries_the_report():
    with pytest.raises(ovfix.AccuracyError) as caught:
        ovfix.convert(two_outputs_model(), target="gpu-fp16", calibration=calibration(),
                      accuracy="y=p99:1e-7", repair=False)
    e = caught.value
    assert isinstance(e, ovfix.Error)
    message = str(e)
    assert re.search(r"output 'y' fails p99:1e-07 \(measured [0-9.e-]+\)", message), message
    assert "keep_fp32" in message and e.suggestion and e.suggestion in message
    assert no_scratch_path(message)
    # The failing outputs' statistics and criteria, and the whole report.
    assert list(e.outputs) == ["y"]
    y = e.outputs["y"]
    assert y["criteria"] == "p99:1e-07" and not y["meets"]
    [check] = y["checks"]
    assert check["criterion"] == "p99:1e-07" and not check["meets"]
    assert check["measured"] == pytest.approx(y["p99_error"]) and check["measured"] > 1e-7
    assert e.report["outputs_match"] is False
    assert list(e.report["outputs"]) == ["z", "y"]
    assert e.report["outputs"]["z"]["meets"]
    assert e.report["failure"] in message
    assert json.loads(e.report["json"])["validation"]["outputs_match"] is False


def test_report_is_data():
    x = calibration()
    model, report = ovfix.convert(two_outputs_model(), target="gpu-fp16", calibration=x,
                                  accuracy=["z=max:0.01", "y=max:0.01,p99:0.01"])
    assert report["outputs_match"]
    assert list(report["outputs"]) == ["z", "y"]
    y = report["outputs"]["y"]
    assert y["criteria"] == "max:0.01,p99:0.01"
    assert [c["criterion"] for c in y["checks"]] == ["max:0.01", "p99:0.01"]
    assert all(c["meets"] for c in y["checks"])
    assert y["statistics"].startswith("max ")
    # The statistics are those of the converted model against the original.
    reference = ovfix.run(two_outputs_model(), x)["y"].astype(np.float64)
    converted = ovfix.run(model, x)["y"].astype(np.float64)
    assert y["max_abs_error"] == pytest.approx(np.abs(reference - converted).max(), rel=1e-5)
    assert isinstance(report["islands"], list) and isinstance(report["steps"], list)
    assert set(report["repair"]) == {"rounds", "kept"}
    assert report["written"] is False  # nothing the user named was written
    assert json.loads(report["json"])["output"] == ""
    assert no_scratch_path(report["json"])


def test_written_whenever_a_file_was_written(tmp_path):
    out = tmp_path / "m.onnx"
    path, report = ovfix.convert(two_outputs_model(), output=out)
    assert report["written"] is True and os.path.isfile(path)
    source = tmp_path / "source.onnx"
    onnx.save(two_outputs_model(), str(source))
    path, report = ovfix.convert(source, output=tmp_path / "n.onnx")
    assert report["written"] is True and os.path.isfile(path)


def test_repair_rounds_and_kept_nodes_are_data():
    """The repair's rounds and the nodes it kept in fp32 reach the report as dicts."""
    _, report = ovfix.convert(two_outputs_model(), target="gpu-fp16", calibration=calibration(),
                              accuracy="y=max:0")
    rounds = report["repair"]["rounds"]
    assert rounds[0]["round"] == 0 and rounds[0]["action"] == "first conversion"
    assert rounds[0]["score"] > 1 and any(r["kept"] and r["score"] <= 1 for r in rounds[1:])
    kept = report["repair"]["kept"]
    assert len(kept) == report["repaired_nodes"] > 0
    assert {"node", "op_type", "round", "error_before", "error_after"} <= set(kept[0])
    assert report["outputs"]["y"]["meets"]


def test_each_failure_has_its_exception(tmp_path):
    model = two_outputs_model()
    with pytest.raises(FileNotFoundError) as e:
        ovfix.convert(str(tmp_path / "missing.onnx"))
    assert isinstance(e.value, ovfix.MissingFileError) and isinstance(e.value, ovfix.Error)
    # A missing output folder: the same exception for a path and for a ModelProto.
    source = tmp_path / "source.onnx"
    onnx.save(model, str(source))
    for m in (model, source):
        with pytest.raises(ovfix.MissingFileError):
            ovfix.convert(m, output=tmp_path / "no" / "folder" / "out.onnx")
    with pytest.raises(FileNotFoundError):
        ovfix.convert(model, rules=str(tmp_path / "missing.rules"))
    with pytest.raises(ovfix.InvalidOptionError) as e:
        ovfix.convert(model, batch=0)
    assert isinstance(e.value, ValueError) and "batch" in str(e.value)
    with pytest.raises(ovfix.InvalidOptionError, match="no_such_option"):
        ovfix.convert(model, no_such_option=1)
    with pytest.raises(ovfix.InvalidOptionError, match="^unknown target 'nope'"):
        ovfix.convert(model, target="nope")
    with pytest.raises(ovfix.InvalidOptionError, match="^accuracy nope=max:1: .*no output 'nope'"):
        ovfix.convert(model, accuracy="nope=max:1")
    with pytest.raises(ovfix.InvalidOptionError, match="unknown backend 'vulkan'"):
        ovfix.Session(model, backend="vulkan")
    with pytest.raises(ovfix.InvalidInputError, match="input 'x' has shape float\\[5,7\\]"):
        ovfix.run(model, {"x": np.ones((5, 7), np.float32)})
    with pytest.raises(TypeError, match="batch: expected an int, got str"):
        ovfix.convert(model, batch="8")
    with pytest.raises(ovfix.InvalidModelError):
        ovfix.convert(b"not a model")
    with pytest.raises(ovfix.InvalidModelError):
        ovfix.Session(b"not a model")
    with pytest.raises(TypeError, match="model: expected a path"):
        ovfix.convert(42)
    with pytest.raises(TypeError, match="input 'x': expected a numpy array"):
        ovfix.run(model, {"x": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]})
    with pytest.raises(TypeError, match="inputs: expected a dict"):
        ovfix.run(model, [np.ones((2, 3), np.float32)])
    custom = helper.make_model(
        helper.make_graph([helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example")],
                          "custom", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    with pytest.raises(ovfix.UnsupportedOpError, match="Frobnicate"):
        ovfix.run(custom, {"x": np.ones(2, np.float32)})


def test_calibration_arrays_are_named_not_their_files():
    with pytest.raises(ovfix.InvalidInputError) as e:
        ovfix.convert(two_outputs_model(), calibration={"ids": np.ones((2, 3), np.float32)})
    message = str(e.value)
    assert "calibration array 'ids'" in message and "no input 'ids'" in message
    assert no_scratch_path(message) and "--input" not in message
    with pytest.raises(TypeError, match="calibration array 'x': expected a numpy array"):
        ovfix.convert(two_outputs_model(), calibration={"x": [1.0, 2.0]})


def test_session_runs_many_times_in_graph_order(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(two_outputs_model(), str(path))
    session = ovfix.Session(path, backend="cpu", precision="fp32", threads=1)
    os.remove(path)  # loaded once: the file is not read again
    assert session.input_names == ["x"]
    assert session.output_names == ["z", "y"]
    rng = np.random.default_rng(0)
    for _ in range(50):
        x = rng.standard_normal((2, 3)).astype(np.float32)
        z, y = session.run({"x": x})
        np.testing.assert_array_equal(z, 2 * x)
        np.testing.assert_array_equal(y, np.maximum(x + B, 0))
        named = session.run({"x": x}, names=True)
        assert list(named) == ["z", "y"]
        np.testing.assert_array_equal(named["y"], y)
        assert list(session.run({"x": x}, output_names=["y"])) == ["y"]
    assert list(ovfix.run(two_outputs_model(), {"x": x})) == ["z", "y"]


def test_session_refuses_another_dtype_unless_cast():
    session = ovfix.Session(two_outputs_model())
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    with pytest.raises(TypeError) as e:
        session.run({"x": x})
    assert "input 'x'" in str(e.value) and "float32" in str(e.value) and "float64" in str(e.value)
    with pytest.raises(TypeError):
        ovfix.run(two_outputs_model(), {"x": x})
    z, y = session.run({"x": x}, cast=True)
    assert z.dtype == np.float32
    np.testing.assert_array_equal(z, 2 * x.astype(np.float32))


def python_blocks(path):
    with open(path) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def test_docs_examples_run(tmp_path, monkeypatch):
    """Every python block of docs/python.md, in order, in one namespace, in a folder that holds
    what they name: model.onnx (the two-output model, input x of [2, 3]) and its test data."""
    onnx.save(two_outputs_model(), str(tmp_path / "model.onnx"))
    data = tmp_path / "model" / "test_data_set_0"
    data.mkdir(parents=True)
    x = calibration()["x"]
    with open(data / "input_0.pb", "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(os.path.join(SOURCE_DIR, "docs", "python.md"))
    assert len(blocks) >= 3
    namespace = {}
    for block in blocks:
        exec(compile(block, "docs/python.md", "exec"), namespace)
