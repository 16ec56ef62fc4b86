#!/usr/bin/python3
"""Writes the modern-ONNX test models of tests/data/modern (dev-time only; the tests read the
checked-in files and need no Python).

    /usr/bin/python3 tests/data/modern/generate.py            # (re)write every case
    /usr/bin/python3 tests/data/modern/generate.py --check    # ... and run each in onnxruntime

Uses the onnx 1.12 Python package (Debian's) only to build protos: its checker and shape
inference stop at opset 17, so they are never called, ir_version is set by hand, and element
types that 1.12 lacks (float8 17..20, uint4 21, int4 22, float4e2m1 23) are written as
TensorProto with data_type as the number and raw_data packed here (4-bit types two per byte,
element 0 in the low nibble).

Layout:
  nodes/<name>/model.onnx, input_K.pb    one op (plus Casts back to a readable type) at the op's
                                         own opset, for what is new in opsets 18-26
  models/<name>/model.onnx, input_K.pb   model classes as current exporters write them

Every case is deterministic (its random generator is seeded from its name). --check runs all of
them with onnxruntime (tests/support/ort_batch.js, graph as written) and prints the failures;
cases onnxruntime cannot run are in DROPPED below (not written) and in README.md.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np
from onnx import TensorProto, helper, mapping, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PHOTOS = os.path.join(ROOT, "tests", "data", "photos")

F = TensorProto.FLOAT
F16 = TensorProto.FLOAT16
I64 = TensorProto.INT64
I32 = TensorProto.INT32
U8 = TensorProto.UINT8
BOOL = TensorProto.BOOL
E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, UINT4, INT4, FLOAT4E2M1 = 17, 18, 19, 20, 21, 22, 23

# Cases that onnxruntime 1.30 cannot run (name -> its reason); they are not written.
DROPPED = {
    "cast_23_float4e2m1": "Could not find an implementation for Cast(23) node (no float4e2m1 "
                          "Cast kernel in the CPU provider)",
}


def ir_for(opset):
    # onnx 1.16/1.17: IR 10 (opsets 21/22; PyTorch's dynamo exporter writes IR 10 with opset 18),
    # 1.18: IR 11 (23), 1.19: IR 12 (24), 1.20: IR 13 (25 and later).
    if opset <= 22:
        return 10
    return {23: 11, 24: 12}.get(opset, 13)


# ---- element types onnx 1.12 lacks ----

def _float8_table(kind):
    """Values of the 256 codes of a float8 type (NaN where the code is NaN)."""
    exp_bits, mant_bits, bias = {E4M3FN: (4, 3, 7), E4M3FNUZ: (4, 3, 8), E5M2: (5, 2, 15),
                                 E5M2FNUZ: (5, 2, 16)}[kind]
    vals = np.zeros(256, np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        e = (code >> mant_bits) & ((1 << exp_bits) - 1)
        m = code & ((1 << mant_bits) - 1)
        if kind in (E4M3FNUZ, E5M2FNUZ) and code == 0x80:
            vals[code] = np.nan
            continue
        if kind == E4M3FN and (code & 0x7F) == 0x7F:
            vals[code] = np.nan
            continue
        if kind == E5M2 and e == 31:
            vals[code] = np.nan if m else sign * np.inf
            continue
        if e == 0:
            v = m / (1 << mant_bits) * 2.0 ** (1 - bias)
        else:
            v = (1 + m / (1 << mant_bits)) * 2.0 ** (e - bias)
        vals[code] = sign * v
    return vals


def float8_bytes(values, kind):
    """Round-to-nearest-even into float8 `kind` (saturating), as bytes."""
    table = _float8_table(kind)
    finite = np.where(np.isfinite(table))[0]
    out = []
    for v in np.asarray(values, np.float64).ravel():
        d = np.abs(table[finite] - v)
        best = finite[d == d.min()]
        even = [c for c in best if c % 2 == 0]
        code = int((even or list(best))[0])
        if v == 0 and kind in (E4M3FN, E5M2):
            code = 0x80 if np.signbit(v) else 0
        out.append(code)
    return bytes(out)


def float8_values(values, kind):
    table = _float8_table(kind)
    return np.array([table[b] for b in float8_bytes(values, kind)], np.float32).reshape(
        np.shape(values))


def pack4(values):
    """4-bit integers, two per byte, element 0 in the low nibble."""
    v = [int(x) & 0xF for x in np.asarray(values).ravel()]
    if len(v) % 2:
        v.append(0)
    return bytes(v[i] | (v[i + 1] << 4) for i in range(0, len(v), 2))


def raw_tensor(name, data_type, dims, raw):
    t = TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def int4_tensor(name, values, signed=True):
    values = np.asarray(values)
    return raw_tensor(name, INT4 if signed else UINT4, values.shape, pack4(values))


def float8_tensor(name, values, kind):
    values = np.asarray(values, np.float32)
    return raw_tensor(name, kind, values.shape, float8_bytes(values, kind))


# ---- building a case ----

class Case:
    def __init__(self, name, opset, extra_opsets=None):
        self.name = name
        self.opset = opset
        self.extra_opsets = extra_opsets or {}
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.nodes, self.inputs, self.inits, self.outputs = [], [], [], []
        self._count = 0

    def inp(self, name, array, shape=None, elem=None):
        array = np.asarray(array)
        self.inputs.append((name, array, shape, elem))
        return name

    def init(self, name, value):
        if isinstance(value, TensorProto):
            value.name = name
            self.inits.append(value)
        else:
            self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, ins, outs, domain="", name=None, **attrs):
        self._count += 1
        self.nodes.append(helper.make_node(op, ins, outs, name=name or f"node_{op}_{self._count}",
                                           domain=domain, **attrs))
        return outs[0] if len(outs) == 1 else outs

    def out(self, name, elem=F, shape=None):
        self.outputs.append(helper.make_tensor_value_info(name, elem, shape))

    def randn(self, *shape, scale=1.0):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def uniform(self, lo, hi, *shape):
        return self.rng.uniform(lo, hi, shape).astype(np.float32)

    def model(self):
        inputs = []
        for name, array, shape, elem in self.inputs:
            elem = elem or mapping.NP_TYPE_TO_TENSOR_TYPE[array.dtype]
            inputs.append(helper.make_tensor_value_info(
                name, elem, list(array.shape) if shape is None else shape))
        graph = helper.make_graph(self.nodes, self.name, inputs, self.outputs, self.inits)
        opsets = [helper.make_opsetid("", self.opset)]
        opsets += [helper.make_opsetid(d, v) for d, v in self.extra_opsets.items()]
        m = helper.make_model(graph, opset_imports=opsets, producer_name="ovfix-modern-tests")
        m.ir_version = ir_for(self.opset)
        return m

    def write(self, folder):
        if os.path.exists(folder):
            shutil.rmtree(folder)
        os.makedirs(folder)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(self.model().SerializeToString())
        for k, (name, array, _, _) in enumerate(self.inputs):
            t = numpy_helper.from_array(array, name)
            with open(os.path.join(folder, f"input_{k}.pb"), "wb") as f:
                f.write(t.SerializeToString())


NODE_CASES = []
MODEL_CASES = []


def node_case(fn):
    NODE_CASES.append(fn)
    return fn


def model_case(fn):
    MODEL_CASES.append(fn)
    return fn


def single(name, opset, op, inputs, n_out=1, out_elems=None, inits=(), **attrs):
    """One node; `inputs` are (name, array) graph inputs, '' for an absent optional input, or
    ('=', name, value) initializers."""
    c = Case(name, opset)
    names = []
    for i in inputs:
        if i == "":
            names.append("")
        elif i[0] == "=":
            names.append(c.init(i[1], i[2]))
        else:
            names.append(c.inp(i[0], i[1]))
    outs = [f"y{k}" if n_out > 1 else "y" for k in range(n_out)]
    c.node(op, names, outs, **attrs)
    for k, o in enumerate(outs):
        c.out(o, (out_elems or [F] * n_out)[k])
    return c


# ---- node cases: opset 18 ----

REDUCE_18 = [("ReduceMean", [1], 1), ("ReduceMax", [0, 2], 0), ("ReduceMin", [-1], 1),
             ("ReduceProd", [1], 0), ("ReduceL1", [2], 1), ("ReduceL2", [0], 0),
             ("ReduceLogSum", [1, 2], 1), ("ReduceLogSumExp", [-2], 0),
             ("ReduceSumSquare", [0, 1], 1), ("ReduceSum", [-1], 0)]


@node_case
def reduce_18():
    cases = []
    for op, axes, keep in REDUCE_18:
        name = f"{op.lower().replace('reduce', 'reduce_')}_18_axes_input"
        c = Case(name, 18)
        x = c.uniform(0.5, 1.5, 2, 3, 4)
        c.node(op, [c.inp("x", x), c.init("axes", np.array(axes, np.int64))], ["y"],
               keepdims=keep)
        c.out("y")
        cases.append(c)
    c = Case("reduce_max_18_axes_runtime_input", 18)
    c.node("ReduceMax", [c.inp("x", c.randn(2, 3, 4)), c.inp("axes", np.array([2, 0], np.int64))],
           ["y"], keepdims=1)
    c.out("y")
    cases.append(c)
    c = Case("reduce_mean_18_empty_axes_noop", 18)
    c.node("ReduceMean", [c.inp("x", c.randn(2, 3)), c.init("axes", np.zeros(0, np.int64))], ["y"],
           noop_with_empty_axes=1)
    c.out("y")
    cases.append(c)
    c = Case("reduce_sum_18_empty_axes_all", 18)
    c.node("ReduceSum", [c.inp("x", c.randn(2, 3)), c.init("axes", np.zeros(0, np.int64))], ["y"],
           keepdims=0)
    c.out("y")
    cases.append(c)
    c = Case("reduce_l2_18_no_axes", 18)
    c.node("ReduceL2", [c.inp("x", c.randn(3, 4))], ["y"], keepdims=1)
    c.out("y")
    cases.append(c)
    return cases


@node_case
def split_18():
    out = []
    c = Case("split_18_num_outputs_even", 18)
    c.node("Split", [c.inp("x", c.randn(2, 6))], ["a", "b", "c"], axis=1, num_outputs=3)
    for n in "abc":
        c.out(n)
    out.append(c)
    c = Case("split_18_num_outputs_uneven", 18)
    c.node("Split", [c.inp("x", c.randn(7, 2))], ["a", "b", "c"], axis=0, num_outputs=3)
    for n in "abc":
        c.out(n)
    out.append(c)
    c = Case("split_18_num_outputs_uneven_4", 18)
    c.node("Split", [c.inp("x", c.randn(2, 3, 10))], ["a", "b", "c", "d"], axis=-1, num_outputs=4)
    for n in "abcd":
        c.out(n)
    out.append(c)
    return out


@node_case
def pad_18_19():
    out = []
    c = Case("pad_18_axes_constant", 18)
    c.node("Pad", [c.inp("x", c.randn(2, 3, 4)), c.init("pads", np.array([1, 0, 2, 1], np.int64)),
                   c.init("value", np.array(0.5, np.float32)),
                   c.init("axes", np.array([1, 2], np.int64))], ["y"], mode="constant")
    c.out("y")
    out.append(c)
    c = Case("pad_18_axes_negative_reflect", 18)
    c.node("Pad", [c.inp("x", c.randn(2, 3, 5)), c.init("pads", np.array([2, 1], np.int64)), "",
                   c.init("axes", np.array([-1], np.int64))], ["y"], mode="reflect")
    c.out("y")
    out.append(c)
    c = Case("pad_18_axes_edge", 18)
    c.node("Pad", [c.inp("x", c.randn(1, 2, 3, 3)),
                   c.init("pads", np.array([1, 2, 0, 1], np.int64)), "",
                   c.init("axes", np.array([3, 2], np.int64))], ["y"], mode="edge")
    c.out("y")
    out.append(c)
    c = Case("pad_19_wrap", 19)
    c.node("Pad", [c.inp("x", c.randn(2, 3, 4)),
                   c.init("pads", np.array([0, 1, 2, 0, 2, 3], np.int64))], ["y"], mode="wrap")
    c.out("y")
    out.append(c)
    c = Case("pad_19_wrap_axes", 19)
    c.node("Pad", [c.inp("x", c.randn(1, 2, 3, 4)),
                   c.init("pads", np.array([1, 3, 2, 1], np.int64)), "",
                   c.init("axes", np.array([2, 3], np.int64))], ["y"], mode="wrap")
    c.out("y")
    out.append(c)
    return out


@node_case
def resize_18_19():
    out = []

    def resize(name, opset, x, scales=None, sizes=None, **attrs):
        c = Case(name, opset)
        ins = [c.inp("x", x), ""]
        ins.append(c.init("scales", np.array(scales, np.float32)) if scales is not None else "")
        if sizes is not None:
            ins.append(c.init("sizes", np.array(sizes, np.int64)))
        c.node("Resize", ins, ["y"], **attrs)
        c.out("y")
        out.append(c)
        return c

    rng = np.random.default_rng(18)
    img = rng.standard_normal((1, 2, 16, 16)).astype(np.float32)
    resize("resize_18_linear_antialias_down", 18, img, scales=[1, 1, 0.5, 0.5], mode="linear",
           antialias=1)
    resize("resize_18_linear_antialias_down_odd", 18, img, scales=[1, 1, 0.6, 0.35],
           mode="linear", antialias=1)
    resize("resize_18_cubic_antialias_down", 18, img, sizes=[1, 2, 7, 9], mode="cubic",
           antialias=1, cubic_coeff_a=-0.5)
    x = rng.standard_normal((1, 1, 16, 12)).astype(np.float32)
    resize("resize_18_keep_aspect_not_larger", 18, x, sizes=[8, 8], axes=[2, 3], mode="linear",
           keep_aspect_ratio_policy="not_larger")
    resize("resize_18_keep_aspect_not_smaller", 18, x, sizes=[8, 8], axes=[2, 3],
           mode="nearest", keep_aspect_ratio_policy="not_smaller")
    resize("resize_18_axes_scales", 18, x, scales=[2.0, 1.5], axes=[3, 2], mode="nearest",
           coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    resize("resize_18_axes_sizes_linear", 18, x, sizes=[5, 20], axes=[2, 3], mode="linear",
           coordinate_transformation_mode="align_corners")
    small = rng.standard_normal((1, 2, 4, 6)).astype(np.float32)
    resize("resize_19_half_pixel_symmetric_up", 19, small, scales=[1, 1, 2.0, 1.5],
           mode="linear", coordinate_transformation_mode="half_pixel_symmetric")
    resize("resize_19_half_pixel_symmetric_down", 19, img, sizes=[1, 2, 7, 5], mode="linear",
           coordinate_transformation_mode="half_pixel_symmetric")
    resize("resize_19_half_pixel_symmetric_cubic", 19, small, sizes=[1, 2, 7, 9], mode="cubic",
           coordinate_transformation_mode="half_pixel_symmetric")
    return out


@node_case
def scatter_18():
    out = []
    for red in ("max", "min"):
        c = Case(f"scatter_elements_18_{red}", 18)
        c.node("ScatterElements", [c.inp("data", c.randn(3, 4)),
                                   c.inp("indices", np.array([[0, 1, 2, 1], [2, 0, 0, 1],
                                                              [0, 1, 2, 1]], np.int64)),
                                   c.inp("updates", c.randn(3, 4))], ["y"], axis=0,
               reduction=red)
        c.out("y")
        out.append(c)
        c = Case(f"scatter_nd_18_{red}", 18)
        c.node("ScatterND", [c.inp("data", c.randn(4, 4)),
                             c.inp("indices", np.array([[0], [2], [0], [3]], np.int64)),
                             c.inp("updates", c.randn(4, 4))], ["y"], reduction=red)
        c.out("y")
        out.append(c)
    c = Case("scatter_elements_18_max_int32_axis1", 18)
    c.node("ScatterElements", [c.inp("data", np.arange(12, dtype=np.int32).reshape(3, 4)),
                               c.inp("indices", np.array([[3, 3], [0, 1], [2, 2]], np.int64)),
                               c.inp("updates", np.array([[20, 5], [-1, 9], [4, 30]], np.int32))],
           ["y"], axis=1, reduction="max")
    c.out("y", I32)
    out.append(c)
    return out


@node_case
def col2im_18():
    out = []
    c = Case("col2im_18", 18)
    c.node("Col2Im", [c.inp("x", c.randn(1, 4, 16)), c.init("image_shape", np.array([5, 5])),
                      c.init("block_shape", np.array([2, 2]))], ["y"])
    c.out("y")
    out.append(c)
    c = Case("col2im_18_pads_strides_dilations", 18)
    # image 7x7, block 3x3, dilation 2 (effective 5), pads 1, stride 2: (7+2-5)/2+1 = 3 -> L 9
    c.node("Col2Im", [c.inp("x", c.randn(2, 18, 9)), c.init("image_shape", np.array([7, 7])),
                      c.init("block_shape", np.array([3, 3]))], ["y"], pads=[1, 1, 1, 1],
           strides=[2, 2], dilations=[2, 2])
    c.out("y")
    out.append(c)
    return out


@node_case
def center_crop_pad_18():
    out = []
    c = Case("center_crop_pad_18_axes", 18)
    c.node("CenterCropPad", [c.inp("x", c.randn(5, 7, 3)), c.init("shape", np.array([4, 10]))],
           ["y"], axes=[0, 1])
    c.out("y")
    out.append(c)
    c = Case("center_crop_pad_18_all", 18)
    c.node("CenterCropPad", [c.inp("x", c.randn(3, 4, 5)), c.init("shape", np.array([5, 2, 5]))],
           ["y"])
    c.out("y")
    out.append(c)
    c = Case("center_crop_pad_18_negative_axes", 18)
    c.node("CenterCropPad", [c.inp("x", c.randn(2, 9, 6)), c.init("shape", np.array([5, 3]))],
           ["y"], axes=[-2, -1])
    c.out("y")
    out.append(c)
    return out


@node_case
def group_norm():
    out = []
    c = Case("group_normalization_18", 18)
    c.node("GroupNormalization", [c.inp("x", c.randn(2, 6, 4, 4)),
                                  c.init("scale", c.randn(3)), c.init("bias", c.randn(3))],
           ["y"], num_groups=3, epsilon=1e-5)
    c.out("y")
    out.append(c)
    c = Case("group_normalization_21", 21)
    c.node("GroupNormalization", [c.inp("x", c.randn(2, 6, 4, 4, scale=3.0) + 1.0),
                                  c.init("scale", c.randn(6)), c.init("bias", c.randn(6))],
           ["y"], num_groups=3, epsilon=1e-5)
    c.out("y")
    out.append(c)
    c = Case("group_normalization_21_stash_3d", 21)
    c.node("GroupNormalization", [c.inp("x", c.randn(1, 8, 10)),
                                  c.init("scale", c.randn(8)), c.init("bias", c.randn(8))],
           ["y"], num_groups=2, stash_type=1)
    c.out("y")
    out.append(c)
    return out


@node_case
def lppool_18():
    out = []
    c = Case("lppool_18_ceil_mode", 18)
    c.node("LpPool", [c.inp("x", c.randn(1, 2, 7, 7))], ["y"], kernel_shape=[3, 3],
           strides=[2, 2], ceil_mode=1, p=2)
    c.out("y")
    out.append(c)
    c = Case("lppool_18_dilations_p3", 18)
    c.node("LpPool", [c.inp("x", c.randn(1, 2, 8, 8))], ["y"], kernel_shape=[2, 2],
           dilations=[2, 2], strides=[1, 1], p=3, pads=[1, 1, 0, 0])
    c.out("y")
    out.append(c)
    return out


@node_case
def small_18():
    out = []
    c = Case("mish_18", 18)
    c.node("Mish", [c.inp("x", c.randn(3, 4, scale=3.0))], ["y"])
    c.out("y")
    out.append(c)
    rng = np.random.default_rng(7)
    a = rng.integers(-1000, 1000, (3, 4)).astype(np.int32)
    b = rng.integers(-1000, 1000, (4,)).astype(np.int32)
    for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
        c = Case(op.lower().replace("bitwise", "bitwise_") + "_18", 18)
        c.node(op, [c.inp("a", a), c.inp("b", b)], ["y"])
        c.out("y", I32)
        out.append(c)
    c = Case("bitwise_xor_18_uint8", 18)
    c.node("BitwiseXor", [c.inp("a", rng.integers(0, 255, (2, 5)).astype(np.uint8)),
                          c.inp("b", rng.integers(0, 255, (2, 5)).astype(np.uint8))], ["y"])
    c.out("y", U8)
    out.append(c)
    c = Case("bitwise_not_18", 18)
    c.node("BitwiseNot", [c.inp("x", a)], ["y"])
    c.out("y", I32)
    out.append(c)
    c = Case("bitwise_not_18_uint8", 18)
    c.node("BitwiseNot", [c.inp("x", rng.integers(0, 255, (6,)).astype(np.uint8))], ["y"])
    c.out("y", U8)
    out.append(c)
    return out


# ---- opset 19 ----

@node_case
def avgpool_19():
    out = []
    c = Case("average_pool_19_dilations", 19)
    c.node("AveragePool", [c.inp("x", c.randn(1, 2, 8, 8))], ["y"], kernel_shape=[2, 2],
           dilations=[2, 2], strides=[1, 1])
    c.out("y")
    out.append(c)
    c = Case("average_pool_19_dilations_pads_ceil", 19)
    c.node("AveragePool", [c.inp("x", c.randn(1, 2, 9, 9))], ["y"], kernel_shape=[3, 3],
           dilations=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
           count_include_pad=0)
    c.out("y")
    out.append(c)
    return out


def cast_input():
    x = np.array([0.0, -0.0, 0.3, -0.7, 1.0, 1.1, 1.9, 3.14159, -2.5, 17.3, 100.0, 240.0, 250.0,
                  448.0, 460.0, 500.0, -1000.0, 57344.0, 60000.0, 70000.0, -1e6, 1e-3, 2e-3,
                  1e-5, -3e-6, 1e-8, 0.015625, 0.0019531, np.inf, -np.inf, np.nan, 7.5],
                 np.float32)
    return x


@node_case
def cast_19():
    out = []
    for kind, tag in ((E4M3FN, "float8e4m3fn"), (E4M3FNUZ, "float8e4m3fnuz"), (E5M2, "float8e5m2"),
                      (E5M2FNUZ, "float8e5m2fnuz")):
        for sat in (1, 0):
            c = Case(f"cast_19_{tag}_saturate{sat}", 19)
            c.node("Cast", [c.inp("x", cast_input())], ["f8"], to=kind, saturate=sat)
            c.node("Cast", ["f8"], ["y"], to=F)
            c.out("y")
            out.append(c)
    c = Case("cast_19_float8e4m3fn_from_float16", 19)
    c.node("Cast", [c.inp("x", cast_input()[:28].astype(np.float16))], ["f8"], to=E4M3FN)
    c.node("Cast", ["f8"], ["y"], to=F16)
    c.out("y", F16)
    out.append(c)
    return out


@node_case
def deform_conv_19():
    out = []
    c = Case("deform_conv_19_mask_bias", 19)
    c.node("DeformConv", [c.inp("x", c.randn(1, 2, 6, 6)), c.init("w", c.randn(4, 2, 3, 3)),
                          c.inp("offset", c.randn(1, 18, 4, 4, scale=0.7)),
                          c.init("b", c.randn(4)),
                          c.inp("mask", c.uniform(0, 1, 1, 9, 4, 4))], ["y"],
           kernel_shape=[3, 3])
    c.out("y")
    out.append(c)
    c = Case("deform_conv_19_offset_group_pads", 19)
    c.node("DeformConv", [c.inp("x", c.randn(1, 4, 5, 5)), c.init("w", c.randn(2, 2, 2, 2)),
                          c.inp("offset", c.randn(1, 16, 5, 5, scale=1.5))], ["y"],
           kernel_shape=[2, 2], pads=[1, 1, 0, 0], group=2, offset_group=2)
    c.out("y")
    out.append(c)
    return out


# ---- opset 20 ----

@node_case
def affine_grid_20():
    out = []
    for ac in (0, 1):
        c = Case(f"affine_grid_20_2d_align{ac}", 20)
        theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], np.float32), (2, 1, 1)) + c.randn(
            2, 2, 3, scale=0.2)
        c.node("AffineGrid", [c.inp("theta", theta),
                              c.init("size", np.array([2, 3, 5, 6], np.int64))], ["y"],
               align_corners=ac)
        c.out("y")
        out.append(c)
    c = Case("affine_grid_20_3d", 20)
    theta = np.eye(3, 4, dtype=np.float32)[None] + c.randn(1, 3, 4, scale=0.2)
    c.node("AffineGrid", [c.inp("theta", theta), c.init("size", np.array([1, 1, 3, 4, 5]))],
           ["y"], align_corners=0)
    c.out("y")
    out.append(c)
    return out


@node_case
def gelu_20():
    out = []
    for approx in ("none", "tanh"):
        c = Case(f"gelu_20_{approx}", 20)
        c.node("Gelu", [c.inp("x", c.randn(3, 5, scale=3.0))], ["y"], approximate=approx)
        c.out("y")
        out.append(c)
    return out


@node_case
def grid_sample_20():
    out = []
    specs = [("linear", "zeros", 0), ("linear", "border", 1), ("cubic", "zeros", 0),
             ("cubic", "border", 1), ("nearest", "reflection", 0), ("linear", "reflection", 1)]
    for mode, pad, ac in specs:
        c = Case(f"grid_sample_20_4d_{mode}_{pad}_align{ac}", 20)
        c.node("GridSample", [c.inp("x", c.randn(1, 2, 5, 6)),
                              c.inp("grid", c.uniform(-1.2, 1.2, 1, 4, 4, 2))], ["y"],
               mode=mode, padding_mode=pad, align_corners=ac)
        c.out("y")
        out.append(c)
    for mode, pad, ac in (("linear", "zeros", 0), ("nearest", "border", 1),
                          ("linear", "reflection", 1)):
        c = Case(f"grid_sample_20_5d_{mode}_{pad}_align{ac}", 20)
        c.node("GridSample", [c.inp("x", c.randn(1, 2, 3, 4, 5)),
                              c.inp("grid", c.uniform(-1.1, 1.1, 1, 2, 3, 3, 3))], ["y"],
               mode=mode, padding_mode=pad, align_corners=ac)
        c.out("y")
        out.append(c)
    return out


@node_case
def dft_20():
    out = []
    c = Case("dft_20_real_axis1", 20)
    c.node("DFT", [c.inp("x", c.randn(2, 8, 1)), "", c.init("axis", np.array(1, np.int64))],
           ["y"])
    c.out("y")
    out.append(c)
    c = Case("dft_20_complex_inverse", 20)
    c.node("DFT", [c.inp("x", c.randn(2, 8, 2))], ["y"], inverse=1)
    c.out("y")
    out.append(c)
    c = Case("dft_20_onesided_length", 20)
    c.node("DFT", [c.inp("x", c.randn(3, 6, 1)), c.init("len", np.array(10, np.int64)),
                   c.init("axis", np.array(-2, np.int64))], ["y"], onesided=1)
    c.out("y")
    out.append(c)
    c = Case("dft_20_axis0", 20)
    c.node("DFT", [c.inp("x", c.randn(5, 3, 2)), "", c.init("axis", np.array(0, np.int64))],
           ["y"])
    c.out("y")
    out.append(c)
    return out


@node_case
def is_20():
    x = np.array([1.0, np.inf, -np.inf, np.nan, 0.0, -3.0, 65504.0, 1e38], np.float32)
    out = []
    c = Case("isinf_20", 20)
    c.node("IsInf", [c.inp("x", x)], ["y"])
    c.out("y", BOOL)
    out.append(c)
    c = Case("isinf_20_negative_only", 20)
    c.node("IsInf", [c.inp("x", x)], ["y"], detect_positive=0)
    c.out("y", BOOL)
    out.append(c)
    c = Case("isnan_20", 20)
    c.node("IsNaN", [c.inp("x", x)], ["y"])
    c.out("y", BOOL)
    out.append(c)
    c = Case("isnan_20_float16", 20)
    c.node("IsNaN", [c.inp("x", x.astype(np.float16))], ["y"])
    c.out("y", BOOL)
    out.append(c)
    return out


@node_case
def reduce_max_20():
    out = []
    c = Case("reduce_max_20_bool", 20)
    c.node("ReduceMax", [c.inp("x", np.array([[True, False, False], [False, False, False]])),
                         c.init("axes", np.array([1], np.int64))], ["y"], keepdims=0)
    c.out("y", BOOL)
    out.append(c)
    c = Case("reduce_min_20_bool", 20)
    c.node("ReduceMin", [c.inp("x", np.array([[True, True, False], [True, True, True]])),
                         c.init("axes", np.array([1], np.int64))], ["y"], keepdims=1)
    c.out("y", BOOL)
    out.append(c)
    c = Case("reduce_max_20_float", 20)
    c.node("ReduceMax", [c.inp("x", c.randn(2, 3, 4)), c.init("axes", np.array([1], np.int64))],
           ["y"])
    c.out("y")
    out.append(c)
    return out


# ---- opset 21 ----

@node_case
def quant_21():
    out = []
    rng = np.random.default_rng(21)
    q = rng.integers(-8, 8, (8, 6))
    c = Case("dequantize_linear_21_blockwise_int4", 21)
    c.node("DequantizeLinear", [c.init("x", int4_tensor("x", q)),
                                c.inp("scale", c.uniform(0.01, 0.2, 2, 6)),
                                c.init("zp", int4_tensor("zp", rng.integers(-3, 3, (2, 6))))],
           ["y"], axis=0, block_size=4)
    c.out("y")
    out.append(c)
    c = Case("dequantize_linear_21_blockwise_uint4_axis1", 21)
    c.node("DequantizeLinear", [c.init("x", int4_tensor("x", rng.integers(0, 16, (4, 10)),
                                                        signed=False)),
                                c.inp("scale", c.uniform(0.01, 0.2, 4, 3)),
                                c.init("zp", int4_tensor("zp", rng.integers(0, 16, (4, 3)),
                                                         signed=False))],
           ["y"], axis=1, block_size=4)  # 10 = 4 + 4 + 2: a partial last block
    c.out("y")
    out.append(c)
    c = Case("dequantize_linear_21_blockwise_int8", 21)
    c.node("DequantizeLinear", [c.inp("x", rng.integers(-128, 128, (6, 4)).astype(np.int8)),
                                c.init("scale", c.uniform(0.01, 0.2, 2, 4)),
                                c.init("zp", rng.integers(-5, 5, (2, 4)).astype(np.int8))],
           ["y"], axis=0, block_size=3)
    c.out("y")
    out.append(c)
    c = Case("dequantize_linear_21_int4_per_axis", 21)
    c.node("DequantizeLinear", [c.init("x", int4_tensor("x", rng.integers(-8, 8, (3, 5)))),
                                c.inp("scale", c.uniform(0.05, 0.5, 5))], ["y"], axis=1)
    c.out("y")
    out.append(c)
    c = Case("quantize_linear_21_blockwise_int4", 21)
    c.node("QuantizeLinear", [c.inp("x", c.randn(4, 8)),
                              c.init("scale", c.uniform(0.1, 0.4, 4, 2)),
                              c.init("zp", int4_tensor("zp", rng.integers(-2, 2, (4, 2))))],
           ["q"], axis=1, block_size=4)
    c.node("DequantizeLinear", ["q", "scale", "zp"], ["y"], axis=1, block_size=4)
    c.out("y")
    out.append(c)
    c = Case("quantize_linear_21_uint4_per_tensor", 21)
    c.node("QuantizeLinear", [c.inp("x", c.randn(3, 7, scale=2.0)),
                              c.init("scale", np.array(0.25, np.float32)),
                              c.init("zp", int4_tensor("zp", np.array(8), signed=False))], ["q"])
    c.node("DequantizeLinear", ["q", "scale", "zp"], ["y"])
    c.out("y")
    out.append(c)
    c = Case("quantize_linear_21_int4_saturating", 21)
    c.node("QuantizeLinear", [c.inp("x", c.randn(2, 6, scale=5.0)),
                              c.init("scale", np.array([0.5, 0.25], np.float32))], ["q"], axis=0,
           output_dtype=INT4)
    c.node("DequantizeLinear", ["q", "scale"], ["y"], axis=0)
    c.out("y")
    out.append(c)
    c = Case("quantize_linear_21_blockwise_int8_output_dtype", 21)
    c.node("QuantizeLinear", [c.inp("x", c.randn(6, 4, scale=3.0)),
                              c.init("scale", c.uniform(0.02, 0.1, 2, 4))], ["q"], axis=0,
           block_size=3, output_dtype=TensorProto.INT8)
    c.out("q", TensorProto.INT8)
    out.append(c)
    c = Case("cast_21_int4_roundtrip", 21)
    c.node("Cast", [c.inp("x", np.array([-9, -8, -3, 0, 5, 7, 8, 20], np.int32))], ["q"], to=INT4)
    c.node("Cast", ["q"], ["y"], to=I32)
    c.out("y", I32)
    out.append(c)
    c = Case("cast_21_float_to_uint4", 21)
    c.node("Cast", [c.inp("x", np.array([0.0, 1.4, 2.5, 3.5, 15.0, 7.6], np.float32))], ["q"],
           to=UINT4)
    c.node("Cast", ["q"], ["y"], to=F)
    c.out("y")
    out.append(c)
    return out


# ---- opset 22 (types-only versions: bfloat16 added) ----

@node_case
def types_22():
    out = []
    for op, attrs in (("Elu", {"alpha": 0.7}), ("Softplus", {}), ("HardSwish", {}),
                      ("ThresholdedRelu", {"alpha": 0.3}), ("Selu", {})):
        c = Case(f"{op.lower()}_22", 22)
        c.node(op, [c.inp("x", c.randn(2, 5, scale=2.0))], ["y"], **attrs)
        c.out("y")
        out.append(c)
    c = Case("conv_22", 22)
    c.node("Conv", [c.inp("x", c.randn(1, 3, 6, 6)), c.init("w", c.randn(4, 3, 3, 3)),
                    c.init("b", c.randn(4))], ["y"], pads=[1, 1, 1, 1], strides=[2, 2])
    c.out("y")
    out.append(c)
    c = Case("max_pool_22", 22)
    c.node("MaxPool", [c.inp("x", c.randn(1, 2, 6, 6))], ["y"], kernel_shape=[3, 3],
           strides=[2, 2], pads=[1, 1, 1, 1])
    c.out("y")
    out.append(c)
    return out


# ---- opset 23 ----

@node_case
def rms_norm_23():
    out = []
    c = Case("rms_normalization_23", 23)
    c.node("RMSNormalization", [c.inp("x", c.randn(2, 3, 8, scale=2.0)),
                                c.init("scale", c.randn(8))], ["y"], epsilon=1e-5)
    c.out("y")
    out.append(c)
    c = Case("rms_normalization_23_axis1", 23)
    c.node("RMSNormalization", [c.inp("x", c.randn(2, 3, 4)), c.init("scale", c.randn(3, 4))],
           ["y"], axis=1)
    c.out("y")
    out.append(c)
    return out


def rope_cache(positions, dim, base=10000.0):
    inv = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    ang = np.arange(positions)[:, None] * inv[None]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


@node_case
def rotary_23():
    out = []
    cos, sin = rope_cache(16, 8)
    c = Case("rotary_embedding_23_4d", 23)
    c.node("RotaryEmbedding", [c.inp("x", c.randn(1, 2, 5, 8)), c.init("cos", cos),
                               c.init("sin", sin),
                               c.inp("pos", np.array([[3, 4, 5, 6, 7]], np.int64))], ["y"])
    c.out("y")
    out.append(c)
    c = Case("rotary_embedding_23_3d_num_heads", 23)
    c.node("RotaryEmbedding", [c.inp("x", c.randn(2, 5, 16)), c.init("cos", cos),
                               c.init("sin", sin),
                               c.inp("pos", np.array([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]],
                                                     np.int64))], ["y"], num_heads=2)
    c.out("y")
    out.append(c)
    cos4, sin4 = rope_cache(16, 4)
    c = Case("rotary_embedding_23_interleaved_partial", 23)
    c.node("RotaryEmbedding", [c.inp("x", c.randn(1, 2, 5, 8)), c.init("cos", cos4),
                               c.init("sin", sin4),
                               c.inp("pos", np.array([[0, 1, 2, 3, 4]], np.int64))], ["y"],
           interleaved=1, rotary_embedding_dim=4)
    c.out("y")
    out.append(c)
    c = Case("rotary_embedding_23_no_position_ids", 23)
    c.node("RotaryEmbedding", [c.inp("x", c.randn(1, 2, 5, 8)),
                               c.inp("cos", cos[2:7][None]), c.inp("sin", sin[2:7][None])], ["y"])
    c.out("y")
    out.append(c)
    return out


def attention(name, opset, q, k, v, mask=None, past=None, outs=1, nonpad=None, **attrs):
    c = Case(name, opset)
    ins = [c.inp("q", q), c.inp("k", k), c.inp("v", v)]
    if mask is not None or past is not None or nonpad is not None:
        ins.append(c.inp("mask", mask) if mask is not None else "")
    if past is not None or nonpad is not None:
        ins += [c.inp("past_key", past[0]), c.inp("past_value", past[1])] if past else ["", ""]
    if nonpad is not None:
        ins.append(c.inp("nonpad_kv_seqlen", nonpad))
    names = ["y", "present_key", "present_value", "qk"][:outs]
    c.node("Attention", ins, names, **attrs)
    for n in names:
        c.out(n)
    return c


@node_case
def attention_23_24():
    out = []
    r = np.random.default_rng(23)

    def rn(*s):
        return r.standard_normal(s).astype(np.float32)

    out.append(attention("attention_23_4d", 23, rn(2, 2, 4, 8), rn(2, 2, 6, 8), rn(2, 2, 6, 8)))
    out.append(attention("attention_23_3d", 23, rn(2, 4, 16), rn(2, 6, 16), rn(2, 6, 12),
                         q_num_heads=2, kv_num_heads=2))
    bool_mask = r.uniform(0, 1, (4, 6)) > 0.3
    bool_mask[:, 0] = True
    out.append(attention("attention_23_mask_bool", 23, rn(2, 2, 4, 8), rn(2, 2, 6, 8),
                         rn(2, 2, 6, 8), mask=bool_mask))
    float_mask = np.where(r.uniform(0, 1, (2, 1, 4, 6)) > 0.3, 0.0,
                          np.finfo(np.float32).min).astype(np.float32)
    out.append(attention("attention_23_mask_float", 23, rn(2, 2, 4, 8), rn(2, 2, 6, 8),
                         rn(2, 2, 6, 8), mask=float_mask))
    out.append(attention("attention_23_causal", 23, rn(1, 2, 5, 8), rn(1, 2, 5, 8),
                         rn(1, 2, 5, 8), is_causal=1))
    out.append(attention("attention_23_causal_3d_gqa", 23, rn(1, 5, 32), rn(1, 5, 16),
                         rn(1, 5, 16), is_causal=1, q_num_heads=4, kv_num_heads=2))
    out.append(attention("attention_23_gqa", 23, rn(1, 4, 3, 8), rn(1, 2, 3, 8), rn(1, 2, 3, 8)))
    out.append(attention("attention_23_past_kv", 23, rn(1, 2, 1, 8), rn(1, 2, 1, 8),
                         rn(1, 2, 1, 8), past=(rn(1, 2, 4, 8), rn(1, 2, 4, 8)), outs=3))
    out.append(attention("attention_23_past_kv_mask_causal", 23, rn(1, 2, 2, 8), rn(1, 2, 2, 8),
                         rn(1, 2, 2, 8), mask=np.zeros((2, 5), np.float32),
                         past=(rn(1, 2, 3, 8), rn(1, 2, 3, 8)), outs=3, is_causal=1))
    out.append(attention("attention_23_scale_softcap", 23, rn(1, 2, 3, 8), rn(1, 2, 4, 8),
                         rn(1, 2, 4, 8), scale=0.5, softcap=2.0))
    out.append(attention("attention_23_qk_output", 23, rn(1, 2, 3, 8), rn(1, 2, 4, 8),
                         rn(1, 2, 4, 8), past=None, mask=np.zeros((3, 4), np.float32), outs=1,
                         qk_matmul_output_mode=0))
    out.append(attention("attention_24_4d", 24, rn(2, 2, 4, 8), rn(2, 2, 6, 8), rn(2, 2, 6, 8)))
    out.append(attention("attention_24_3d_causal_mask", 24, rn(1, 4, 16), rn(1, 4, 16),
                         rn(1, 4, 16), mask=np.zeros((4, 4), np.float32), is_causal=1,
                         q_num_heads=2, kv_num_heads=2))
    out.append(attention("attention_24_nonpad_kv_seqlen", 24, rn(2, 2, 3, 8), rn(2, 2, 6, 8),
                         rn(2, 2, 6, 8), nonpad=np.array([4, 6], np.int64)))
    return out


@node_case
def cast_23():
    out = []
    c = Case("cast_23_float4e2m1", 23)
    c.node("Cast", [c.inp("x", np.array([0.0, 0.3, 0.7, 1.2, 1.6, 2.4, 2.6, 3.5, 5.0, 6.0, 7.0,
                                         -0.4, -4.5, 100.0], np.float32))], ["q"],
           to=FLOAT4E2M1)
    c.node("Cast", ["q"], ["y"], to=F)
    c.out("y")
    out.append(c)
    return out


# ---- opset 24 ----

@node_case
def ops_24():
    out = []
    c = Case("swish_24", 24)
    c.node("Swish", [c.inp("x", c.randn(3, 4, scale=3.0))], ["y"], alpha=1.5)
    c.out("y")
    out.append(c)
    c = Case("swish_24_default_alpha", 24)
    c.node("Swish", [c.inp("x", c.randn(5, scale=3.0))], ["y"])
    c.out("y")
    out.append(c)
    c = Case("tensor_scatter_24_linear", 24)
    c.node("TensorScatter", [c.inp("cache", c.randn(2, 2, 6, 4)), c.inp("update", c.randn(2, 2, 2, 4)),
                             c.inp("write_indices", np.array([1, 3], np.int64))], ["y"])
    c.out("y")
    out.append(c)
    c = Case("tensor_scatter_24_circular", 24)
    c.node("TensorScatter", [c.inp("cache", c.randn(2, 5, 3)), c.inp("update", c.randn(2, 3, 3)),
                             c.inp("write_indices", np.array([4, 1], np.int64))], ["y"],
           mode="circular", axis=1)
    c.out("y")
    out.append(c)
    c = Case("tensor_scatter_24_no_indices", 24)
    c.node("TensorScatter", [c.inp("cache", c.randn(1, 4, 3)), c.inp("update", c.randn(1, 2, 3))],
           ["y"])
    c.out("y")
    out.append(c)
    x = np.random.default_rng(24).permutation(18).reshape(3, 6).astype(np.float32) * 0.5
    for largest in (1, 0):
        c = Case(f"topk_24_{'largest' if largest else 'smallest'}", 24)
        c.node("TopK", [c.inp("x", x), c.init("k", np.array([3], np.int64))], ["values", "indices"],
               axis=1, largest=largest, sorted=1)
        c.out("values")
        c.out("indices", I64)
        out.append(c)
    c = Case("squeeze_24", 24)
    c.node("Squeeze", [c.inp("x", c.randn(2, 1, 3, 1)), c.init("axes", np.array([1, -1]))], ["y"])
    c.out("y")
    out.append(c)
    return out


# ---- opset 25, 26 ----

@node_case
def ops_25_26():
    out = []
    c = Case("identity_25", 25)
    c.node("Identity", [c.inp("x", c.randn(2, 3))], ["y"])
    c.out("y")
    out.append(c)
    c = Case("reshape_25", 25)
    c.node("Reshape", [c.inp("x", c.randn(2, 3, 4)), c.init("shape", np.array([0, -1]))], ["y"])
    c.out("y")
    out.append(c)
    c = Case("transpose_25", 25)
    c.node("Transpose", [c.inp("x", c.randn(2, 3, 4))], ["y"], perm=[2, 0, 1])
    c.out("y")
    out.append(c)
    c = Case("cast_25_int32_to_float16", 25)
    c.node("Cast", [c.inp("x", np.array([1, -70000, 65504, 3], np.int32))], ["y"], to=F16)
    c.out("y", F16)
    out.append(c)
    x = (np.random.default_rng(26).uniform(0.5, 1.5, (2, 5))).astype(np.float32)
    for exclusive, reverse in ((0, 0), (1, 0), (0, 1), (1, 1)):
        c = Case(f"cumprod_26_exclusive{exclusive}_reverse{reverse}", 26)
        c.node("CumProd", [c.inp("x", x), c.init("axis", np.array(1, np.int64))], ["y"],
               exclusive=exclusive, reverse=reverse)
        c.out("y")
        out.append(c)
    c = Case("cumprod_26_int64_axis0", 26)
    c.node("CumProd", [c.inp("x", np.array([[1, 2, 3], [4, -5, 6], [2, 2, 2]], np.int64)),
                       c.init("axis", np.array(0, np.int64))], ["y"])
    c.out("y", I64)
    out.append(c)
    c = Case("bitcast_26_float_to_int32", 26)
    c.node("BitCast", [c.inp("x", np.array([[1.0, -2.5, 0.0], [np.inf, 3.1, -0.0]], np.float32))],
           ["y"], to=I32)
    c.out("y", I32)
    out.append(c)
    c = Case("bitcast_26_int32_to_float", 26)
    c.node("BitCast", [c.inp("x", np.array([1065353216, -1071644672, 0, 1], np.int32))], ["y"],
           to=F)
    c.out("y")
    out.append(c)
    c = Case("bitcast_26_float16_to_uint16_via_int16", 26)
    c.node("BitCast", [c.inp("x", np.array([1.0, -2.0, 65504.0, 0.1], np.float16))], ["y"],
           to=TensorProto.INT16)
    c.out("y", TensorProto.INT16)
    out.append(c)
    return out


# ---- model classes ----

def photo(name):
    from onnx import load_tensor
    return numpy_helper.to_array(load_tensor(os.path.join(PHOTOS, name)))


def imagenet(img_hwc):
    x = img_hwc.astype(np.float32) / 255.0
    x = (x - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225],
                                                                       np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def he(c, *shape):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    return (c.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


@model_case
def cnn_18():
    c = Case("cnn_18", 18)
    x = c.inp("input", imagenet(photo("coffee_64.pb")), shape=["batch", 3, 64, 64])
    h = x
    for i, (ci, co) in enumerate(((3, 16), (16, 32), (32, 48))):
        # BatchNorm folded into the conv's weight and bias, as exporters write eval models
        h = c.node("Conv", [h, c.init(f"conv{i}.weight", he(c, co, ci, 3, 3)),
                            c.init(f"conv{i}.bias", c.randn(co, scale=0.1))], [f"conv{i}"],
                   pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1], group=1,
                   name=f"node_Conv_{i}")
        h = c.node("Relu", [h], [f"relu{i}"])
        if i < 2:
            h = c.node("MaxPool", [h], [f"pool{i}"], kernel_shape=[2, 2], strides=[2, 2],
                       pads=[0, 0, 0, 0], dilations=[1, 1], ceil_mode=0)
    h = c.node("GlobalAveragePool", [h], ["gap"])
    h = c.node("Flatten", [h], ["flat"], axis=1)
    c.node("Gemm", [h, c.init("fc.weight", he(c, 10, 48)), c.init("fc.bias", c.randn(10, scale=0.1))],
           ["logits"], transB=1)
    c.out("logits", F, ["batch", 10])
    return c


def encoder_tokens(c, seq=12, valid=9, vocab=200):
    ids = c.rng.integers(5, vocab, (1, seq)).astype(np.int64)
    ids[0, 0] = 1  # [CLS]
    ids[0, valid - 1] = 2  # [SEP]
    ids[0, valid:] = 0  # [PAD]
    mask = np.zeros((1, seq), np.int64)
    mask[0, :valid] = 1
    return ids, mask


def encoder(opset):
    """A 2-layer BERT-style encoder (hidden 32, 4 heads, ffn 64), dynamic batch and sequence,
    the padding mask as (1 - mask) * finfo(float32).min added to the scores."""
    c = Case(f"transformer_encoder_{opset}", opset)
    H, NH, HD, FF, V, L = 32, 4, 8, 64, 200, 2
    ids, mask = encoder_tokens(c, vocab=V)
    c.inp("input_ids", ids, shape=["batch", "sequence"])
    c.inp("attention_mask", mask, shape=["batch", "sequence"])
    emb = c.node("Gather", [c.init("embeddings.word", c.randn(V, H, scale=0.5)), "input_ids"],
                 ["word_emb"])
    shape = c.node("Shape", ["input_ids"], ["ids_shape"])
    seqlen = c.node("Gather", [shape, c.init("one", np.array([1], np.int64))], ["seqlen"], axis=0)
    pos = c.node("Slice", [c.init("embeddings.position", c.randn(64, H, scale=0.1)),
                           c.init("zero", np.array([0], np.int64)), seqlen,
                           c.init("zero_axis", np.array([0], np.int64))], ["pos_emb"])
    h = c.node("Add", [emb, pos], ["emb"])
    m = c.node("Cast", ["attention_mask"], ["mask_f"], to=F)
    m = c.node("Sub", [c.init("one_f", np.array(1.0, np.float32)), m], ["inv_mask"])
    m = c.node("Mul", [m, c.init("finfo_min", np.array(np.finfo(np.float32).min, np.float32))],
               ["mask_add"])
    m = c.node("Unsqueeze", [m, c.init("mask_axes", np.array([1, 2], np.int64))], ["ext_mask"])
    if opset >= 23:
        # Attention-23 in onnxruntime takes a mask of [.., q_seq, kv_seq], not [.., 1, kv_seq]:
        # expanded to [batch, 1, seq, seq] as exporters do for the 4-D mask
        bsz = c.node("Gather", [shape, c.init("zero_idx", np.array([0], np.int64))], ["bsz"],
                     axis=0)
        full = c.node("Concat", [bsz, c.init("one_dim", np.array([1], np.int64)), seqlen, seqlen],
                      ["mask_shape"], axis=0)
        m = c.node("Expand", [m, full], ["ext_mask_4d"])
    last = c.init("last_axis", np.array([-1], np.int64))

    def layer_norm(x, name):
        g = c.init(f"{name}.weight", 1 + c.randn(H, scale=0.1))
        b = c.init(f"{name}.bias", c.randn(H, scale=0.1))
        if opset >= 23:
            return c.node("LayerNormalization", [x, g, b], [f"{name}_out"], axis=-1,
                          epsilon=1e-12)
        mean = c.node("ReduceMean", [x, last], [f"{name}_mean"], keepdims=1)
        d = c.node("Sub", [x, mean], [f"{name}_centered"])
        sq = c.node("Pow", [d, c.init(f"{name}_two", np.array(2.0, np.float32))], [f"{name}_sq"])
        var = c.node("ReduceMean", [sq, last], [f"{name}_var"], keepdims=1)
        var = c.node("Add", [var, c.init(f"{name}_eps", np.array(1e-12, np.float32))],
                     [f"{name}_var_eps"])
        std = c.node("Sqrt", [var], [f"{name}_std"])
        n = c.node("Div", [d, std], [f"{name}_norm"])
        n = c.node("Mul", [n, g], [f"{name}_scaled"])
        return c.node("Add", [n, b], [f"{name}_out"])

    def linear(x, name, i, o):
        y = c.node("MatMul", [x, c.init(f"{name}.weight", c.randn(i, o, scale=1 / np.sqrt(i)))],
                   [f"{name}_mm"])
        return c.node("Add", [y, c.init(f"{name}.bias", c.randn(o, scale=0.02))], [f"{name}_out"])

    h = layer_norm(h, "embeddings.LayerNorm")
    heads = c.init("heads_shape", np.array([0, 0, NH, HD], np.int64))
    merged = c.init("merged_shape", np.array([0, 0, H], np.int64))
    for li in range(L):
        p = f"layer{li}"
        qkv = linear(h, f"{p}.qkv", H, 3 * H)
        if opset >= 23:
            q, k, v = c.node("Split", [qkv], [f"{p}_q", f"{p}_k", f"{p}_v"], axis=-1, num_outputs=3)
            ctx = c.node("Attention", [q, k, v, m], [f"{p}_ctx"], q_num_heads=NH, kv_num_heads=NH)
        else:
            q, k, v = c.node("Split", [qkv], [f"{p}_q", f"{p}_k", f"{p}_v"], axis=-1, num_outputs=3)
            q = c.node("Reshape", [q, heads], [f"{p}_q4"])
            q = c.node("Transpose", [q], [f"{p}_qt"], perm=[0, 2, 1, 3])
            k = c.node("Reshape", [k, heads], [f"{p}_k4"])
            k = c.node("Transpose", [k], [f"{p}_kt"], perm=[0, 2, 3, 1])
            v = c.node("Reshape", [v, heads], [f"{p}_v4"])
            v = c.node("Transpose", [v], [f"{p}_vt"], perm=[0, 2, 1, 3])
            s = c.node("MatMul", [q, k], [f"{p}_scores"])
            s = c.node("Mul", [s, c.init(f"{p}_scale", np.array(1 / np.sqrt(HD), np.float32))],
                       [f"{p}_scaled"])
            s = c.node("Add", [s, m], [f"{p}_masked"])
            s = c.node("Softmax", [s], [f"{p}_probs"], axis=-1)
            ctx = c.node("MatMul", [s, v], [f"{p}_ctx4"])
            ctx = c.node("Transpose", [ctx], [f"{p}_ctxt"], perm=[0, 2, 1, 3])
            ctx = c.node("Reshape", [ctx, merged], [f"{p}_ctx"])
        a = linear(ctx, f"{p}.attn_out", H, H)
        h = layer_norm(c.node("Add", [a, h], [f"{p}_res1"]), f"{p}.ln1")
        f = linear(h, f"{p}.ffn_in", H, FF)
        if opset >= 20:
            f = c.node("Gelu", [f], [f"{p}_gelu"])
        else:
            e = c.node("Div", [f, c.init(f"{p}_sqrt2", np.array(np.sqrt(2), np.float32))],
                       [f"{p}_gelu_div"])
            e = c.node("Erf", [e], [f"{p}_gelu_erf"])
            e = c.node("Add", [e, c.init(f"{p}_gelu_one", np.array(1.0, np.float32))],
                       [f"{p}_gelu_add"])
            e = c.node("Mul", [f, e], [f"{p}_gelu_mul"])
            f = c.node("Mul", [e, c.init(f"{p}_gelu_half", np.array(0.5, np.float32))],
                       [f"{p}_gelu"])
        f = linear(f, f"{p}.ffn_out", FF, H)
        h = layer_norm(c.node("Add", [f, h], [f"{p}_res2"]), f"{p}.ln2")
    c.node("Identity", [h], ["last_hidden_state"])
    cls = c.node("Gather", [h, c.init("cls_index", np.array(0, np.int64))], ["cls"], axis=1)
    pooled = linear(cls, "pooler", H, H)
    c.node("Tanh", [pooled], ["pooler_output"])
    c.out("last_hidden_state", F, ["batch", "sequence", H])
    c.out("pooler_output", F, ["batch", H])
    return c


@model_case
def transformer_encoder_18():
    return encoder(18)


@model_case
def transformer_encoder_23():
    return encoder(23)


@model_case
def decoder_23():
    """A 2-layer Llama-style decoder block stack: RMSNormalization, RotaryEmbedding on q and k,
    causal grouped-query Attention (4 query heads, 2 kv heads), SwiGLU MLP, tied-size lm head."""
    c = Case("llama_decoder_23", 23)
    H, NQ, NKV, HD, FF, V, L, S = 32, 4, 2, 8, 64, 128, 2, 10
    ids = c.rng.integers(3, V, (1, S)).astype(np.int64)
    ids[0, 0] = 1
    c.inp("input_ids", ids, shape=["batch", "sequence"])
    c.inp("position_ids", np.arange(S, dtype=np.int64)[None], shape=["batch", "sequence"])
    cos, sin = rope_cache(64, HD)
    c.init("rope.cos", cos)
    c.init("rope.sin", sin)
    h = c.node("Gather", [c.init("embed_tokens.weight", c.randn(V, H, scale=0.5)), "input_ids"],
               ["embeds"])
    q_shape = c.init("q_shape", np.array([0, 0, NQ, HD], np.int64))
    kv_shape = c.init("kv_shape", np.array([0, 0, NKV, HD], np.int64))
    merged = c.init("merged_shape", np.array([0, 0, NQ * HD], np.int64))

    def rms(x, name):
        return c.node("RMSNormalization", [x, c.init(f"{name}.weight", 1 + c.randn(H, scale=0.1))],
                      [f"{name}_out"], axis=-1, epsilon=1e-6)

    def proj(x, name, i, o):
        return c.node("MatMul", [x, c.init(f"{name}.weight", c.randn(i, o, scale=1 / np.sqrt(i)))],
                      [f"{name}_out"])

    for li in range(L):
        p = f"layers.{li}"
        n = rms(h, f"{p}.input_layernorm")
        heads = []
        for t, nh, shp in (("q", NQ, q_shape), ("k", NKV, kv_shape), ("v", NKV, kv_shape)):
            x = proj(n, f"{p}.self_attn.{t}_proj", H, nh * HD)
            x = c.node("Reshape", [x, shp], [f"{p}_{t}4"])
            x = c.node("Transpose", [x], [f"{p}_{t}t"], perm=[0, 2, 1, 3])
            if t != "v":
                x = c.node("RotaryEmbedding", [x, "rope.cos", "rope.sin", "position_ids"],
                           [f"{p}_{t}rot"])
            heads.append(x)
        a = c.node("Attention", heads, [f"{p}_attn"], is_causal=1)
        a = c.node("Transpose", [a], [f"{p}_attn_t"], perm=[0, 2, 1, 3])
        a = c.node("Reshape", [a, merged], [f"{p}_attn_merged"])
        a = proj(a, f"{p}.self_attn.o_proj", NQ * HD, H)
        h = c.node("Add", [h, a], [f"{p}_res1"])
        n = rms(h, f"{p}.post_attention_layernorm")
        g = proj(n, f"{p}.mlp.gate_proj", H, FF)
        g = c.node("Mul", [g, c.node("Sigmoid", [g], [f"{p}_gate_sig"])], [f"{p}_gate_silu"])
        u = proj(n, f"{p}.mlp.up_proj", H, FF)
        m = proj(c.node("Mul", [g, u], [f"{p}_gated"]), f"{p}.mlp.down_proj", FF, H)
        h = c.node("Add", [h, m], [f"{p}_res2"])
    h = rms(h, "norm")
    proj(h, "lm_head", H, V)
    c.node("Identity", ["lm_head_out"], ["logits"])
    c.out("logits", F, ["batch", "sequence", V])
    return c


@model_case
def detector_18():
    """A single-scale anchor detector on a photograph: conv backbone (stride 4), box deltas and
    class scores per anchor (16x16 grid, 1 anchor of 12 px), box decoding, NonMaxSuppression."""
    c = Case("detector_nms_18", 18)
    img = photo("chelsea_96.pb")[16:80, 16:80]
    c.inp("images", imagenet(img), shape=["batch", 3, 64, 64])
    h = "images"
    for i, (ci, co, s) in enumerate(((3, 16, 2), (16, 24, 2), (24, 32, 1))):
        h = c.node("Conv", [h, c.init(f"backbone.{i}.weight", he(c, co, ci, 3, 3)),
                            c.init(f"backbone.{i}.bias", c.randn(co, scale=0.1))], [f"feat{i}"],
                   pads=[1, 1, 1, 1], strides=[s, s])
        h = c.node("Relu", [h], [f"feat{i}_relu"])
    G, A, C = 16, G_ANCH, 2
    deltas = c.node("Conv", [h, c.init("head.box.weight", c.randn(4, 32, 1, 1, scale=0.05)),
                             c.init("head.box.bias", np.zeros(4, np.float32))], ["box_deltas"])
    logits = c.node("Conv", [h, c.init("head.cls.weight", c.randn(C, 32, 1, 1, scale=0.6)),
                             c.init("head.cls.bias", np.array([-1.0, -1.5], np.float32))],
                    ["cls_logits"])
    # [B, 4, G, G] -> [B, G*G, 4]
    d = c.node("Reshape", [deltas, c.init("box_shape", np.array([0, 4, -1], np.int64))], ["d3"])
    d = c.node("Transpose", [d], ["d_t"], perm=[0, 2, 1])
    ys, xs = np.meshgrid(np.arange(G), np.arange(G), indexing="ij")
    ctr = np.stack([ys.ravel(), xs.ravel()], 1).astype(np.float32) * 4 + 2  # stride 4
    anchors = np.concatenate([ctr - A / 2, ctr + A / 2], 1)[None].astype(np.float32)
    boxes = c.node("Add", [c.init("anchors", anchors),
                           c.node("Mul", [d, c.init("delta_scale", np.array(A, np.float32))],
                                  ["d_scaled"])], ["boxes"])
    s = c.node("Reshape", [logits, c.init("cls_shape", np.array([0, C, -1], np.int64))], ["s3"])
    scores = c.node("Sigmoid", [s], ["scores"])
    c.node("NonMaxSuppression", [boxes, scores, c.init("max_out", np.array([20], np.int64)),
                                 c.init("iou", np.array([0.4], np.float32)),
                                 c.init("score_thr", np.array([0.25], np.float32))],
           ["selected_indices"], center_point_box=0)
    c.out("boxes", F, ["batch", G * G, 4])
    c.out("scores", F, ["batch", C, G * G])
    c.out("selected_indices", I64, ["num_selected", 3])
    return c


G_ANCH = 12


def lstm_weights(c, hidden, feat, dirs=1):
    return (c.randn(dirs, 4 * hidden, feat, scale=0.3), c.randn(dirs, 4 * hidden, hidden, scale=0.3),
            c.randn(dirs, 8 * hidden, scale=0.1))


@model_case
def lstm_if_21():
    """A sequence model whose recurrent core sits in an If on an int64 input (as exporters write
    `if mode > 0:` branches, cf. silero VAD): an LSTM forward in one branch, a reverse LSTM in
    the other; input a [1, T, F] feature sequence (a noisy sine bank)."""
    c = Case("lstm_in_if_21", 21)
    T, Fd, Hd = 12, 8, 16
    t = np.arange(T)[:, None]
    f = np.arange(1, Fd + 1)[None]
    x = (np.sin(2 * np.pi * t * f / 24.0) + 0.1 * c.randn(T, Fd))[None].astype(np.float32)
    c.inp("features", x, shape=["batch", T, Fd])
    c.inp("mode", np.array(1, np.int64), shape=[])
    c.node("Transpose", ["features"], ["x_tbf"], perm=[1, 0, 2])
    c.node("Greater", ["mode", c.init("zero", np.array(0, np.int64))], ["use_forward"])

    def branch(name, direction, seed_tag):
        W, R, B = lstm_weights(c, Hd, Fd)
        inits = [numpy_helper.from_array(W, f"{name}.W"), numpy_helper.from_array(R, f"{name}.R"),
                 numpy_helper.from_array(B, f"{name}.B")]
        nodes = [helper.make_node("LSTM", ["x_tbf", f"{name}.W", f"{name}.R", f"{name}.B"],
                                  [f"{name}_Y", f"{name}_Yh"], hidden_size=Hd,
                                  direction=direction, name=f"{name}_lstm"),
                 helper.make_node("Squeeze", [f"{name}_Yh", f"{name}_axes"], [f"{name}_h"],
                                  name=f"{name}_squeeze")]
        inits.append(numpy_helper.from_array(np.array([0], np.int64), f"{name}_axes"))
        return helper.make_graph(nodes, name, [], [
            helper.make_tensor_value_info(f"{name}_h", F, None)], inits)

    c.node("If", ["use_forward"], ["state"], then_branch=branch("then_forward", "forward", 0),
           else_branch=branch("else_reverse", "reverse", 1))
    c.node("MatMul", ["state", c.init("classifier.weight", c.randn(Hd, 3, scale=0.5))], ["cls"])
    c.node("Softmax", ["cls"], ["probs"], axis=-1)
    c.out("state", F, ["batch", Hd])
    c.out("probs", F, ["batch", 3])
    return c


@model_case
def quant_int4_21():
    """An MLP whose weights are int4 with block-wise scales and zero points along the input
    dimension (block 16), DequantizeLinear -> MatMul, as weight-only quantizers write them."""
    c = Case("mlp_int4_blockwise_21", 21)
    dims = [64, 48, 10]
    x = np.concatenate([np.sin(np.linspace(0, 6, 32)), np.cos(np.linspace(0, 9, 32))])
    c.inp("x", x[None].astype(np.float32), shape=["batch", dims[0]])
    h = "x"
    for i in range(2):
        k, n = dims[i], dims[i + 1]
        w = c.randn(k, n, scale=1 / np.sqrt(k))
        blocks = w.reshape(k // 16, 16, n)
        lo, hi = blocks.min(1), blocks.max(1)
        scale = ((hi - lo) / 15.0).astype(np.float32)
        zp = np.clip(np.round(-8 - lo / scale), -8, 7).astype(np.int64)
        q = np.clip(np.round(blocks / scale[:, None] + zp[:, None]), -8, 7).reshape(k, n)
        c.init(f"fc{i}.qweight", int4_tensor("", q))
        c.init(f"fc{i}.scales", scale)
        c.init(f"fc{i}.zero_points", int4_tensor("", zp))
        wd = c.node("DequantizeLinear", [f"fc{i}.qweight", f"fc{i}.scales", f"fc{i}.zero_points"],
                    [f"fc{i}.weight"], axis=0, block_size=16)
        h = c.node("MatMul", [h, wd], [f"fc{i}_mm"])
        h = c.node("Add", [h, c.init(f"fc{i}.bias", c.randn(n, scale=0.05))], [f"fc{i}_out"])
        if i == 0:
            h = c.node("Relu", [h], ["fc0_relu"])
    c.node("Identity", [h], ["logits"])
    c.out("logits", F, ["batch", dims[-1]])
    return c


@model_case
def fp8_qdq_19():
    """A conv net in float8 QDQ form: activations QuantizeLinear/DequantizeLinear through
    float8e4m3fn, conv weights float8e4m3fn initializers with a scale, fed a photograph."""
    c = Case("conv_float8_qdq_19", 19)
    img = photo("coffee_64.pb")[::2, ::2]
    c.inp("image", imagenet(img), shape=[1, 3, 32, 32])
    h = "image"
    zp = c.init("act_zp", float8_tensor("", np.array(0.0, np.float32), E4M3FN))
    for i, (ci, co) in enumerate(((3, 8), (8, 16))):
        s = c.init(f"act{i}_scale", np.array(0.02 * (i + 1), np.float32))
        q = c.node("QuantizeLinear", [h, s, zp], [f"act{i}_q"], saturate=1)
        h = c.node("DequantizeLinear", [q, s, zp], [f"act{i}_dq"])
        w = he(c, co, ci, 3, 3)
        ws = np.float32(np.abs(w).max() / 448.0)
        c.init(f"conv{i}.weight_f8", float8_tensor("", w / ws, E4M3FN))
        c.init(f"conv{i}.weight_scale", np.array(ws, np.float32))
        wd = c.node("DequantizeLinear", [f"conv{i}.weight_f8", f"conv{i}.weight_scale"],
                    [f"conv{i}.weight"])
        h = c.node("Conv", [h, wd, c.init(f"conv{i}.bias", c.randn(co, scale=0.1))], [f"conv{i}"],
                   pads=[1, 1, 1, 1], strides=[2, 2])
        h = c.node("Relu", [h], [f"relu{i}"])
    h = c.node("GlobalAveragePool", [h], ["gap"])
    c.node("Flatten", [h], ["features"], axis=1)
    c.out("features", F, [1, 16])
    return c


# ---- driver ----

def all_cases():
    nodes, models = [], []
    for fn in NODE_CASES:
        r = fn()
        nodes += r if isinstance(r, list) else [r]
    for fn in MODEL_CASES:
        models.append(fn())
    return nodes, models


def check(folders):
    modules = os.environ.get("OVFIX_ORT_MODULES", os.path.join(ROOT, "build", "ort", "node_modules"))
    tmp = tempfile.mkdtemp(prefix="modern_check_")
    jobs = []
    for folder in folders:
        ins = sorted((f for f in os.listdir(folder) if f.startswith("input_")),
                     key=lambda f: int(f[6:-3]))
        out = os.path.join(tmp, os.path.relpath(folder, HERE).replace("/", "__"))
        jobs.append("\t".join([out, os.path.join(folder, "model.onnx")] +
                              [os.path.join(folder, f) for f in ins]))
    with open(os.path.join(tmp, "jobs.txt"), "w") as f:
        f.write("\n".join(jobs) + "\n")
    env = dict(os.environ, NODE_PATH=modules)
    subprocess.run(["node", os.path.join(ROOT, "tests", "support", "ort_batch.js"),
                    os.path.join(tmp, "jobs.txt")], check=True, env=env)
    bad = 0
    for folder in folders:
        out = os.path.join(tmp, os.path.relpath(folder, HERE).replace("/", "__"))
        err = os.path.join(out, "error.txt")
        if os.path.exists(err):
            bad += 1
            print(f"ORT FAIL {os.path.relpath(folder, HERE)}: {open(err).read().strip()[:400]}")
    print(f"{len(folders) - bad} of {len(folders)} cases run in onnxruntime ({tmp})")


def main():
    nodes, models = all_cases()
    names = [c.name for c in nodes + models]
    assert len(names) == len(set(names)), "duplicate case names"
    folders = []
    for sub, cases in (("nodes", nodes), ("models", models)):
        base = os.path.join(HERE, sub)
        if os.path.exists(base):
            shutil.rmtree(base)
        for c in cases:
            if c.name in DROPPED:
                continue
            folder = os.path.join(base, c.name)
            c.write(folder)
            folders.append(folder)
    total = 0
    for folder in folders:
        for f in os.listdir(folder):
            size = os.path.getsize(os.path.join(folder, f))
            total += size
            if size > 200_000:
                print(f"warning: {folder}/{f} is {size} bytes")
    print(f"wrote {len(folders)} cases, {total} bytes")
    if "--check" in sys.argv:
        check(folders)


if __name__ == "__main__":
    main()
