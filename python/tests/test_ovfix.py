"""The Python module (docs/python.md) against independent references: numpy for a hand-built
model, the test data's expected outputs, and the command line's bytes for conversions.

Run by ctest (library.python) with PYTHONPATH at the build tree's python/ folder;
OVFIX_BINARY is the ovfix binary, OVFIX_TEST_MODEL a folder with model.onnx and
test_data_set_0/.
"""

import glob
import json
import os
import re
import subprocess

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper, TensorProto

import ovfix

BINARY = os.environ.get("OVFIX_BINARY", "")
SOURCE_DIR = os.environ.get("OVFIX_SOURCE_DIR", "")
MODEL_DIR = os.environ.get("OVFIX_TEST_MODEL", "")
MODEL = os.path.join(MODEL_DIR, "model.onnx")
DATA = os.path.join(MODEL_DIR, "test_data_set_0")
needs_model = pytest.mark.skipif(not os.path.isfile(MODEL) or not os.path.isfile(BINARY),
                                 reason="no shared test model or ovfix binary")
needs_binary = pytest.mark.skipif(not os.path.isfile(BINARY), reason="no ovfix binary")


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


def cli_convert_with_report(tmp_path, *args):
    """The bytes `ovfix convert` writes and its JSON report, without the file names."""
    report = str(tmp_path / "cli.json")
    written = cli_convert(tmp_path, "--report", report, *args)
    with open(report) as f:
        return written, without_paths(f.read())


def without_paths(report_json):
    """The report without the file names and the time it measured (never the same twice)."""
    report = json.loads(report_json)
    del report["input"], report["output"]
    report.pop("time", None)
    return report


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
def test_defaults_are_the_command_lines(tmp_path):
    """convert() without a target converts as `ovfix convert` without --target does: the
    option table's default target, the same bytes."""
    [target] = [o for o in ovfix.options() if o["name"] == "target"]
    expected = cli_convert(tmp_path, "--calibration-data", DATA)
    model, report = ovfix.convert(MODEL, calibration=DATA)
    assert report["target"] == target["default"] == "generic"
    assert model.SerializeToString() == expected
    assert "default generic" in ovfix.convert.__doc__


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
                           "--no-keep-io-types", "--calibration-data", DATA)
    model, report = ovfix.convert(MODEL, target="tensorrt", precision="fp16", keep_io_types=False,
                                  calibration=DATA)
    assert model.SerializeToString() == expected
    assert any(s["name"] == "fp16_islands" for s in report["steps"])
    with pytest.raises(ovfix.Error, match="target openvino-gpu runs every tensor in the float type"):
        ovfix.convert(MODEL, target="openvino-gpu", precision="bf16", calibration=DATA)


def test_report_says_which_steps_ran_and_why_not():
    """The report's steps are the plan's: a step switched off or disabled says why, in the
    words of `ovfix convert --plan`; options that did nothing are warnings."""
    _, report = ovfix.convert(add_relu_model(), target="gpu-fp16", precision="fp32",
                              disable="constant_folding", keep_fp32="Relu", validate=False)
    steps = {s["name"]: s for s in report["steps"]}
    assert steps["fp16_islands"]["runs"] is False
    assert steps["fp16_islands"]["why_not"] == "switched off: precision fp32"
    assert steps["constant_folding"]["why_not"] == "disabled (--disable constant_folding)"
    assert steps["dead_code_elimination"]["runs"] is True
    assert steps["dead_code_elimination"]["why_not"] == ""
    assert any(w.startswith("--keep-fp32 has no effect: fp16_islands does not run")
               for w in report["warnings"]), report["warnings"]


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
    # A name from the model with a line break in it stays on the line, escaped.
    broken = add_relu_model()
    broken.graph.node[1].input[0] = "s\nt"
    for call in (lambda: ovfix.convert(broken), lambda: ovfix.compare(broken, broken),
                 lambda: ovfix.run(broken, {"x": np.ones((2, 3), np.float32)})):
        with pytest.raises(ovfix.Error) as e:
            call()
        assert "'s\\nt'" in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_malformed_declared_types_raise_instead_of_crashing(tmp_path):
    """The fuzzer's finds (an empty TypeProto crashed onnx 1.12's shape inference): every call
    raises ovfix.Error with the one line naming the value, from a path and from a ModelProto."""
    paths = sorted(glob.glob(os.path.join(SOURCE_DIR, "fuzz", "regressions", "load_model",
                                          "*.onnx")))
    assert len(paths) >= 7, SOURCE_DIR
    for path in paths:
        proto = onnx.load(path)
        for call in (lambda: ovfix.convert(path), lambda: ovfix.convert(proto),
                     lambda: ovfix.compare(path, path),
                     lambda: ovfix.run(proto, {"x": np.ones((3,), np.float32)})):
            with pytest.raises(ovfix.Error) as e:
                call()
            assert "input 'x'" in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_unknown_keyword_names_the_closest_and_the_options():
    with pytest.raises(ovfix.Error) as e:
        ovfix.convert(add_relu_model(), keep_io_type=True)
    message = str(e.value)
    assert "unknown option 'keep_io_type'" in message
    assert "did you mean 'keep_io_types'?" in message
    for option in ovfix.options():
        assert option["name"] in message


def test_option_values_are_checked_by_the_options_type():
    model = add_relu_model()
    with pytest.raises(ovfix.Error, match="batch: expected a positive integer, got '0'"):
        ovfix.convert(model, target="generic", batch=0)
    with pytest.raises(ovfix.Error, match="batch: expected an int, got float"):
        ovfix.convert(model, target="generic", batch=1.5)
    with pytest.raises(ovfix.Error, match="keep_io_types: expected True or False, got str"):
        ovfix.convert(model, target="generic", keep_io_types="yes")
    with pytest.raises(ovfix.Error, match="broadcast: .*'diagonal'"):
        ovfix.convert(model, target="generic", broadcast="diagonal")
    with pytest.raises(ovfix.Error, match="input_shape: "):
        ovfix.convert(model, target="generic", input_shape={"x": ["two", 3]})


@needs_binary
def test_keywords_are_the_command_lines_conversion_flags():
    """convert()'s keywords and `ovfix convert`'s flags, read from its --help: the same
    options, so neither drifts from the table."""
    help_text = subprocess.run([BINARY, "convert", "--help"], check=True, capture_output=True,
                               text=True).stdout
    flags = set()
    for line in help_text.splitlines():
        if line.startswith("  -"):
            flags.update(re.findall(r"--[a-z0-9][a-z0-9-]*", line.split()[0]))
    # The command's own flags: output, display and the report (convert's report= parameter).
    own = {"--help", "--verbose", "--quiet", "--in-place", "--external-data",
           "--no-external-data", "--external-data-name", "--report", "--plan"}
    keywords = {o["name"] for o in ovfix.options()}
    derived = {("--no-" if o["type"] == "bool" and o["default"] == "true" else "--")
               + o["name"].replace("_", "-") for o in ovfix.options()}
    assert derived == flags - own
    assert {o["flag"] for o in ovfix.options()} == derived
    assert len(keywords) == len(derived)


def test_every_target_file_is_listed():
    """convert()'s target option names every rules/targets/*.target, from ovfix's registry:
    a new target file needs no change here or in the module."""
    if not os.path.isdir(os.path.join(SOURCE_DIR, "rules", "targets")):
        pytest.skip("no source tree")
    names = sorted(os.path.splitext(os.path.basename(f))[0]
                   for f in glob.glob(os.path.join(SOURCE_DIR, "rules", "targets", "*.target")))
    assert names
    [target] = [o for o in ovfix.options() if o["name"] == "target"]
    listed = target["help"].split(":", 1)[1].split(", or a .target file")[0]
    assert sorted(n.strip() for n in listed.split(",")) == names
    for name in names:
        assert name in ovfix.convert.__doc__


def test_docs_list_the_keywords():
    """docs/python.md's table of keyword options is the table's."""
    doc = os.path.join(SOURCE_DIR, "docs", "python.md")
    if not os.path.isfile(doc):
        pytest.skip("no source tree")
    with open(doc) as f:
        text = f.read()
    section = text.split("## Keyword options", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `([a-z0-9_]+)` \|", section, re.M)
    assert sorted(documented) == sorted(o["name"] for o in ovfix.options())
    for option in ovfix.options():
        assert option["name"] in ovfix.convert.__doc__


def every_option():
    """Each keyword of the table with a value, and the flags that say the same on the
    command line."""
    rules = os.path.join(SOURCE_DIR, "examples", "rules", "hardswish.rules")
    input_file = os.path.join(DATA, "input_0.pb")
    return {
        "target": ("tensorrt", ["--target", "tensorrt"]),
        "precision": ("fp32", ["--precision", "fp32"]),
        "batch": (1, ["--batch", "1"]),
        "opset": (18, ["--opset", "18"]),
        "input_shape": ({"x": [2, 64]}, ["--input-shape", "x=2x64"]),  # refused: x is 1x64
        # refused: x is 1x64 in the model
        "shape_range": ({"x": "1x32:1x64:1x128"}, ["--shape-range", "x=1x32:1x64:1x128"]),
        "keep_fp32": (["Exp", "ReduceSum"], ["--keep-fp32", "Exp", "--keep-fp32", "ReduceSum"]),
        "keep_io_types": (False, ["--no-keep-io-types"]),
        "fp16_islands": ("magnitude", ["--fp16-islands", "magnitude"]),
        "fp16_magnitude_threshold": (0.25, ["--fp16-magnitude-threshold", "0.25"]),
        "broadcast": ("full", ["--broadcast", "full"]),
        "lower_conv3d_unit_kernel": (True, ["--lower-conv3d-unit-kernel"]),
        "fold_size_limit": (4, ["--fold-size-limit", "4"]),
        "mask_bound": (1024, ["--mask-bound", "1024"]),
        "rules": (rules, ["--rules", rules]),
        "disable": ("constant_folding", ["--disable", "constant_folding"]),
        "validate": (False, ["--no-validate"]),
        "input": ({"x": input_file}, ["--input", "x=" + input_file]),
        "calibration_data": (DATA, ["--calibration-data", DATA]),
        "tolerance": (0.05, ["--tolerance", "0.05"]),
        "accuracy": ("max:0.05", ["--accuracy", "max:0.05"]),
        "repair": (False, ["--no-repair"]),
        "certify": ("off", ["--certify", "off"]),
        # refused: gpu-fp16 has no bfloat16 kernels
        "island_precision": ("bf16", ["--island-precision", "bf16"]),
    }


# The options that change nothing on the test model: no dynamic dim, no constant folding
# would make larger than 4 elements, magnitude islands are the structural ones, nothing to
# repair, no fp32 island for the certificate to try, and no attention mask to bound. Every other one changes the bytes,
# the report (lower_conv3d_unit_kernel: its step runs, which the report says) or refuses the
# model.
SAME_AS_DEFAULT_HERE = {"batch", "fold_size_limit", "fp16_islands", "repair", "certify",
                        "mask_bound"}


@needs_model
def test_every_keyword_gives_the_command_lines_bytes_and_report(tmp_path):
    """Each keyword of the table against its flag: the bytes and the JSON report of
    `ovfix convert` (or its refusal), converting for gpu-fp16 with calibration data."""
    cases = every_option()
    assert sorted(cases) == sorted(o["name"] for o in ovfix.options()), \
        "a keyword without a case here (or a case for an option the table lost)"
    baseline = cli_convert_with_report(tmp_path, "--target", "gpu-fp16", "--calibration-data", DATA)
    for name, (value, flags) in cases.items():
        target = [] if name == "target" else ["--target", "gpu-fp16"]
        options = dict({"target": "gpu-fp16"}, **{name: value})
        try:
            expected = cli_convert_with_report(tmp_path, *target, "--calibration-data", DATA,
                                               *flags)
        except subprocess.CalledProcessError:
            with pytest.raises(ovfix.Error):
                ovfix.convert(MODEL, calibration=DATA, **options)
            assert name not in SAME_AS_DEFAULT_HERE
            continue
        model, report = ovfix.convert(MODEL, calibration=DATA, **options)
        assert model.SerializeToString() == expected[0], name
        assert without_paths(report["json"]) == expected[1], name
        assert (expected == baseline) == (name in SAME_AS_DEFAULT_HERE), name


def matmul_tanh_model(seed=3):
    """y = tanh(x @ w), 8 outputs: an fp16 conversion moves y by a few 1e-4 of its range."""
    w = np.random.default_rng(seed).standard_normal((16, 8)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Tanh", ["m"], ["y"])],
        "matmul_tanh",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def sqrt_model(abs_first):
    """y = sqrt(|x|), or sqrt(x): NaN for the negative x the tests feed."""
    nodes = [helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Sqrt", ["a"], ["y"])]
    if not abs_first:
        nodes = [helper.make_node("Sqrt", ["x"], ["y"])]
    graph = helper.make_graph(nodes, "sqrt", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def fp16_conversion(x):
    """matmul_tanh_model and its gpu-fp16 conversion with float16 inputs and outputs."""
    original = matmul_tanh_model()
    converted, _ = ovfix.convert(original, target="gpu-fp16", keep_io_types=False,
                                 calibration={"x": x})
    assert converted.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    return original, converted


def test_compare_measures_float16_outputs_as_floats():
    """The errors of a float16 output are those of its values: max |a - b| and its share of the
    reference's range, computed here from the two runs' raw outputs."""
    x = (np.random.default_rng(7).standard_normal((1, 16)) * 0.3).astype(np.float32)
    original, converted = fp16_conversion(x)
    a = ovfix.run(original, {"x": x})["y"]
    b = ovfix.run(converted, {"x": x.astype(np.float16)})["y"]
    assert b.dtype == np.float16
    difference = np.abs(a.astype(np.float64) - b.astype(np.float64))
    largest = float(difference.max())
    assert largest > 0
    result = ovfix.compare(original, converted, {"x": x})
    y = result["outputs"]["y"]
    assert y["max_abs_error"] == pytest.approx(largest, rel=1e-6)
    assert y["relative_error"] == pytest.approx(largest / float(a.max() - a.min()), rel=1e-5)
    assert y["mean_error"] == pytest.approx(float(difference.mean()) / float(a.max() - a.min()),
                                            rel=1e-5)
    assert y["non_finite"] == 0 and y["elements"] == 8


def test_compare_judges_by_converts_default_criteria():
    """A conversion convert accepts meets compare's defaults: fp16 ones for a float16 model
    (max:0.01 for 8 elements), each criterion with its measure; tolerance= is max:X."""
    x = (np.random.default_rng(7).standard_normal((1, 16)) * 0.3).astype(np.float32)
    original, converted = fp16_conversion(x)
    a = ovfix.run(original, {"x": x})["y"].astype(np.float64)
    b = ovfix.run(converted, {"x": x.astype(np.float16)})["y"].astype(np.float64)
    relative = float(np.abs(a - b).max() / (a.max() - a.min()))
    assert 1e-4 < relative < 0.01  # beyond the fp32 default, within the fp16 one
    result = ovfix.compare(original, converted, {"x": x})
    assert result["outputs_match"]
    y = result["outputs"]["y"]
    assert y["meets"] and y["within_tolerance"]
    assert y["criteria"] == "max:0.01"
    assert y["checks"] == [{"criterion": "max:0.01", "measured": pytest.approx(relative, rel=1e-5),
                            "bound": 0.01, "meets": True}]
    assert y["score"] == pytest.approx(relative / 0.01, rel=1e-5)
    strict = ovfix.compare(original, converted, {"x": x}, tolerance=1e-4)
    assert not strict["outputs_match"] and strict["outputs"]["y"]["criteria"] == "max:0.0001"
    judged = ovfix.compare(original, converted, {"x": x}, accuracy="y=top1:0")
    assert judged["outputs"]["y"]["criteria"] == "top1:0"
    # fp32 on both sides of one model keeps the fp32 default.
    same = ovfix.compare(original, inputs={"x": x})
    assert same["outputs"]["y"]["criteria"] == "max:0.0001"
    with pytest.raises(ovfix.Error, match="has no output 'nope'"):
        ovfix.compare(original, converted, {"x": x}, accuracy=["nope=max:1"])
    with pytest.raises(ovfix.Error, match="tolerance: expected a number, got str"):
        ovfix.compare(original, converted, {"x": x}, tolerance="0.1")


@needs_binary
def test_compare_gives_the_command_lines_verdict(tmp_path):
    """The dict's statistics and verdict are those `ovfix compare` prints for the same files."""
    x = (np.random.default_rng(7).standard_normal((1, 16)) * 0.3).astype(np.float32)
    original, converted = fp16_conversion(x)
    onnx.save(original, str(tmp_path / "a.onnx"))
    onnx.save(converted, str(tmp_path / "b.onnx"))
    onnx.save_tensor(numpy_helper.from_array(x, "x"), str(tmp_path / "x.pb"))
    cli = subprocess.run([BINARY, "compare", str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx"),
                          "--input", "x=" + str(tmp_path / "x.pb")],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    line = next(l for l in cli.stdout.splitlines() if l.startswith("output 'y': "))
    y = ovfix.compare(original, converted, {"x": x})["outputs"]["y"]
    assert line == "output 'y': %s; score %s (%s) - meets the criteria" % (
        y["statistics"], "%.2g" % y["score"], y["criteria"])


def test_compare_counts_non_finite_values():
    """NaN where the reference is finite: counted, an infinite error, never an error of 0."""
    x = np.array([[-1.0, -4.0, -9.0], [-0.25, -2.0, -3.0]], np.float32)
    result = ovfix.compare(sqrt_model(True), sqrt_model(False), {"x": x})
    assert not result["outputs_match"]
    y = result["outputs"]["y"]
    assert y["non_finite"] == 6
    assert y["max_abs_error"] == float("inf") and y["relative_error"] == float("inf")
    assert not y["meets"] and not y["checks"][0]["meets"]
    assert "6 NaN/inf" in y["statistics"]


def test_compare_backends_judges_fp16_storage_by_the_fp16_defaults():
    x = (np.random.default_rng(7).standard_normal((1, 16)) * 0.3).astype(np.float32)
    model = matmul_tanh_model()
    a = ovfix.run(model, {"x": x})["y"].astype(np.float64)
    b = ovfix.run(model, {"x": x}, precision="fp16-storage")["y"].astype(np.float64)
    assert 1e-4 < float(np.abs(a - b).max() / (a.max() - a.min())) < 0.01
    result = ovfix.compare(model, inputs={"x": x}, precision="fp16-storage")
    assert result["outputs_match"]
    assert result["outputs"]["y"]["criteria"] == "max:0.01"


def test_compare_judges_a_bfloat16_conversion_by_its_defaults():
    """A gpu-bf16 conversion is judged by convert's bfloat16 default (max:0.02 below 100
    elements), the criteria its report names, not by the tighter fp16 one."""
    x = (np.random.default_rng(7).standard_normal((1, 16)) * 0.3).astype(np.float32)
    original = matmul_tanh_model()
    converted, report = ovfix.convert(original, target="gpu-bf16", calibration={"x": x})
    assert json.loads(report["json"])["validation"]["outputs"][0]["criteria"] == "max:0.02"
    y = ovfix.compare(original, converted, {"x": x})["outputs"]["y"]
    assert y["criteria"] == "max:0.02"
    assert y["meets"]
