#!/usr/bin/env python3
"""Writes the hostile and odd ONNX inputs of test/onnx/hostile.test into
the directory given: files that are not models, tensors whose declared
sizes lie, external data that leaves the model's folder, folding that
would build a huge constant, names that collide or hold control
characters, deep nesting, an opset out of range, and a working folder
with an onnx.py and a numpy/ that must never be imported."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def make(nodes, inputs, outputs, initializers=(), opset=20, name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def save(directory, name, model):
    path = os.path.join(directory, name)
    with open(path, "wb") as f:  # onnx.save would check or move external data
        f.write(model.SerializeToString())
    return path


def relu_model(inits=(), extra_nodes=(), out="y"):
    return make(list(extra_nodes) + [helper.make_node("Relu", ["x"], [out])],
                [tensor("x", F, [3])], [tensor(out, F, [3])], inits)


def external(name, dims, location, offset=0, length=None):
    t = TensorProto(name=name, data_type=F, dims=dims)
    t.data_location = TensorProto.EXTERNAL
    entries = {"location": location, "offset": str(offset)}
    if length is not None:
        entries["length"] = str(length)
    for k, v in entries.items():
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def raw_tensor(name, dims, raw):
    """A float tensor of `dims` holding `raw` as its data, unchecked
    (onnx.helper refuses to make one that lies)."""
    t = TensorProto(name=name, data_type=F, dims=dims)
    t.raw_data = raw
    return t


def with_weight(t):
    """y = x + t (t: f32[3]), so the initializer is used."""
    return make([helper.make_node("Add", ["x", t.name], ["y"])],
                [tensor("x", F, [3])], [tensor("y", F, [3])], [t])


def nested_if(depth):
    cond = helper.make_tensor("c", TensorProto.BOOL, [], [True])
    leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["r0"])], "leaf", [],
                             [tensor("r0", F, [3])])
    body = leaf
    for k in range(depth):  # (the else branch a leaf: the model stays small)
        node = helper.make_node("If", ["c"], [f"r{k + 1}"], then_branch=body, else_branch=leaf)
        body = helper.make_graph([node], f"level{k}", [], [tensor(f"r{k + 1}", F, [3])])
    return make(list(body.node), [tensor("x", F, [3])], [tensor(f"r{depth}", F, [3])], [cond])


def main(d):
    os.makedirs(d, exist_ok=True)
    # Sizes that lie: huge dims with 4 bytes; raw data shorter or longer.
    huge = raw_tensor("w", [1000000, 1000000], b"\0\0\0\0")
    save(d, "huge_dims.onnx", with_weight(huge))
    save(d, "short_raw.onnx", with_weight(raw_tensor("w", [3], b"\0" * 8)))
    save(d, "long_raw.onnx", with_weight(raw_tensor("w", [3], b"\0" * 16)))
    save(d, "few_floats.onnx", with_weight(TensorProto(name="w", data_type=F, dims=[3], float_data=[1.0, 2.0])))
    # External data: good, escaping by .., absolute, through a symlink,
    # shorter than declared, and declared over the 1 GiB state limit.
    os.makedirs(os.path.join(d, "ext"), exist_ok=True)
    np.array([1, 2, 3], np.float32).tofile(os.path.join(d, "ext", "w.bin"))
    np.array([1, 2, 3], np.float32).tofile(os.path.join(d, "secret.bin"))
    save(d, "ext/good.onnx", with_weight(external("w", [3], "w.bin")))
    save(d, "ext/dotdot.onnx", with_weight(external("w", [3], "../secret.bin")))
    save(d, "ext/absolute.onnx", with_weight(external("w", [3], os.path.join(d, "secret.bin"))))
    link = os.path.join(d, "ext", "link.bin")
    if not os.path.lexists(link):
        os.symlink(os.path.join(d, "secret.bin"), link)
    save(d, "ext/symlink.onnx", with_weight(external("w", [3], "link.bin")))
    save(d, "ext/short.onnx", with_weight(external("w", [3], "w.bin", offset=8)))
    save(d, "ext/fifo_data.onnx", with_weight(external("w", [3], "fifo.bin")))
    save(d, "ext/over_state.onnx",
         with_weight(external("w", [(1 << 28) + 1], "absent.bin")))
    # Folding that would materialize 10^18 elements.
    dims = numpy_helper.from_array(np.array([10 ** 9, 10 ** 9], np.int64), "dims")
    save(d, "const_of_shape.onnx",
         make([helper.make_node("ConstantOfShape", ["dims"], ["big"]),
               helper.make_node("Shape", ["big"], ["s"]),
               helper.make_node("Reshape", ["x", "s"], ["y"])],
              [tensor("x", F, [3])], [tensor("y", F, None)], [dims]))
    # A fold that divides by zero (NumPy would warn): +inf, spelled in the IR.
    one = numpy_helper.from_array(np.array([1.0], np.float32), "one")
    zero = numpy_helper.from_array(np.array([0.0], np.float32), "zero")
    save(d, "div_zero.onnx",
         make([helper.make_node("Div", ["one", "zero"], ["inf"]),
               helper.make_node("Add", ["x", "inf"], ["y"])],
              [tensor("x", F, [3])], [tensor("y", F, [3])], [one, zero]))
    # Pad with a constant value of -inf.
    pads = numpy_helper.from_array(np.array([1, 1], np.int64), "pads")
    value = numpy_helper.from_array(np.array(-np.inf, np.float32), "value")
    save(d, "pad_inf.onnx",
         make([helper.make_node("Pad", ["x", "pads", "value"], ["y"])],
              [], [tensor("y", F, [5])],
              [pads, value, numpy_helper.from_array(np.array([1, 2, 3], np.float32), "x")]))
    # Names that collide after sanitizing ('a b' first), and names with
    # control characters or of 5000 characters on refused nodes.
    save(d, "collide.onnx",
         make([helper.make_node("Sub", ["a b", "a_b"], ["y z"]),
               helper.make_node("Neg", ["y z"], ["y_z"])],
              [tensor("a b", F, [2]), tensor("a_b", F, [2])],
              [tensor("y z", F, [2]), tensor("y_z", F, [2])]))
    save(d, "control.onnx",
         make([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="bad\n\x1b[31mname")],
              [tensor("x", F, [4]), tensor("k", TensorProto.INT64, [1])],
              [tensor("v", F, [2]), tensor("i", TensorProto.INT64, [2])]))
    save(d, "long_name.onnx",
         make([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="n" * 5000)],
              [tensor("x", F, [4]), tensor("k", TensorProto.INT64, [1])],
              [tensor("v", F, [2]), tensor("i", TensorProto.INT64, [2])]))
    # A model the importer maps but the verifier refuses (a 19.6 GB
    # result): the error names the .onnx file and the ONNX node.
    save(d, "too_big.onnx",
         make([helper.make_node("MatMul", ["a", "b"], ["y"], name="outer")],
              [tensor("a", F, [70000, 1]), tensor("b", F, [1, 70000])],
              [tensor("y", F, [70000, 70000])]))
    save(d, "deep_if.onnx", nested_if(20))
    m = relu_model()
    m.opset_import[0].version = 99
    save(d, "opset99.onnx", m)
    save(d, "relu.onnx", relu_model())
    save(d, "-dash.onnx", relu_model())
    save(d, "UPPER.ONNX", relu_model())
    save(d, "dynamic.onnx", make([helper.make_node("Relu", ["x"], ["y"])],
                                 [tensor("x", F, ["N", 3])], [tensor("y", F, ["N", 3])]))
    # A working folder whose onnx.py and numpy/ announce an import.
    inject = os.path.join(d, "inject")
    os.makedirs(os.path.join(inject, "numpy"), exist_ok=True)
    os.makedirs(os.path.join(inject, "cgc"), exist_ok=True)
    for path, what in ((os.path.join(inject, "onnx.py"), "onnx"),
                       (os.path.join(inject, "numpy", "__init__.py"), "numpy"),
                       (os.path.join(inject, "cgc", "__init__.py"), "cgc")):
        with open(path, "w") as f:
            f.write(f"open({os.path.join(inject, 'INJECTED-' + what)!r}, 'w').close()\n"
                    f"raise SystemExit('the working folder\\'s {what} was imported')\n")
    save(inject, "relu.onnx", relu_model())


if __name__ == "__main__":
    main(sys.argv[1])
