#!/usr/bin/env python3
"""Writes the small ONNX models the importer's lit tests read (into the
directory given): one the importer maps, and one for each kind of
refusal."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(directory, name, nodes, inputs, outputs, initializers=(), opset=20):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, os.path.join(directory, name + ".onnx"))


def save_with(directory, name, nodes, inputs, outputs, value_info):
    graph = helper.make_graph(nodes, name, inputs, outputs, value_info=value_info)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    onnx.save(model, os.path.join(directory, name + ".onnx"))


def tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def main(directory):
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(32, np.float32), "b")
    shape = numpy_helper.from_array(np.array([0, 4, 8], np.int64), "shape")
    save(directory, "mlp", [helper.make_node("MatMul", ["x", "w"], ["h"]),
                            helper.make_node("Add", ["h", "b"], ["a"]),
                            helper.make_node("Gelu", ["a"], ["g"]),
                            helper.make_node("Reshape", ["g", "shape"], ["y"]),
                            helper.make_node("Softmax", ["y"], ["p"], axis=-1)],
         [tensor("x", TensorProto.FLOAT, [2, 64])], [tensor("p", TensorProto.FLOAT, [2, 4, 8])],
         [w, b, shape])
    save(directory, "topk", [helper.make_node("TopK", ["x", "k"], ["v", "i"])],
         [tensor("x", TensorProto.FLOAT, [4]), tensor("k", TensorProto.INT64, [1])],
         [tensor("v", TensorProto.FLOAT, [2]), tensor("i", TensorProto.INT64, [2])])
    save(directory, "det", [helper.make_node("Det", ["x"], ["d"])],
         [tensor("x", TensorProto.FLOAT, [3, 3])], [tensor("d", TensorProto.FLOAT, [])])
    save(directory, "double", [helper.make_node("Relu", ["x"], ["y"])],
         [tensor("x", TensorProto.DOUBLE, [3])], [tensor("y", TensorProto.DOUBLE, [3])])
    save(directory, "shape_input", [helper.make_node("Reshape", ["x", "s"], ["y"])],
         [tensor("x", TensorProto.FLOAT, [6]), tensor("s", TensorProto.INT64, [2])],
         [tensor("y", TensorProto.FLOAT, [2, 3])])
    save(directory, "dynamic", [helper.make_node("Relu", ["x"], ["y"])],
         [tensor("x", TensorProto.FLOAT, ["N", 3])], [tensor("y", TensorProto.FLOAT, ["N", 3])])
    save(directory, "domain", [helper.make_node("Foo", ["x"], ["y"], domain="com.example")],
         [tensor("x", TensorProto.FLOAT, [3])], [tensor("y", TensorProto.FLOAT, [3])])
    save(directory, "last_index", [helper.make_node("ArgMax", ["x"], ["y"], select_last_index=1)],
         [tensor("x", TensorProto.FLOAT, [3])], [tensor("y", TensorProto.INT64, [1])])
    # Operators ONNX defines as functions: expanded into their bodies.
    save(directory, "mvn", [helper.make_node("MeanVarianceNormalization", ["x"], ["y"])],
         [tensor("x", TensorProto.FLOAT, [2, 3, 4, 4])], [tensor("y", TensorProto.FLOAT, [2, 3, 4, 4])])
    save(directory, "bernoulli", [helper.make_node("Bernoulli", ["x"], ["y"])],
         [tensor("x", TensorProto.FLOAT, [4])], [tensor("y", TensorProto.FLOAT, [4])])
    # Pad wider than its axis: the reflection repeats (as numpy.pad's).
    pads = numpy_helper.from_array(np.array([4, 2], np.int64), "pads")
    x = numpy_helper.from_array(np.array([1, 2, 3], np.float32), "x")
    save(directory, "reflect", [helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")],
         [], [tensor("y", TensorProto.FLOAT, [9])], [pads, x])
    save(directory, "pads_input", [helper.make_node("Pad", ["x", "p"], ["y"])],
         [tensor("x", TensorProto.FLOAT, [3]), tensor("p", TensorProto.INT64, [2])],
         [tensor("y", TensorProto.FLOAT, [5])])
    # Declarations contradicting what the operators compute: refused.
    flat = [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Softmax", ["f"], ["y"])]
    x23 = [tensor("x", TensorProto.FLOAT, [2, 3])]
    save_with(directory, "stale_value_info", flat, x23, [tensor("y", TensorProto.FLOAT, [2, 3])],
              value_info=[tensor("f", TensorProto.FLOAT, [3, 2])])
    save(directory, "stale_output", flat, x23, [tensor("y", TensorProto.FLOAT, [3, 2])])
    save(directory, "stale_dtype", flat, x23, [tensor("y", TensorProto.FLOAT16, [2, 3])])
    save_with(directory, "symbolic_value_info", flat, x23, [tensor("y", TensorProto.FLOAT, ["N", 3])],
              value_info=[tensor("f", TensorProto.FLOAT, ["N", "M"])])
    # Constant indices out of range, an arg-reduction over an empty axis.
    save(directory, "gather_oob", [helper.make_node("Gather", ["x", "i"], ["y"])],
         [tensor("x", TensorProto.FLOAT, [3, 2])], [tensor("y", TensorProto.FLOAT, [2, 2])],
         [numpy_helper.from_array(np.array([0, 3], np.int64), "i")])
    save(directory, "gather_elements_oob",
         [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
         [tensor("x", TensorProto.FLOAT, [3, 2])], [tensor("y", TensorProto.FLOAT, [3, 1])],
         [numpy_helper.from_array(np.array([[0], [-3], [1]], np.int64), "i")])
    save(directory, "gather_nd_oob", [helper.make_node("GatherND", ["x", "i"], ["y"])],
         [tensor("x", TensorProto.FLOAT, [3, 2])], [tensor("y", TensorProto.FLOAT, [2])],
         [numpy_helper.from_array(np.array([[0, 1], [2, -3]], np.int64), "i")])
    save(directory, "argmax_empty", [helper.make_node("ArgMax", ["x"], ["y"], axis=1)],
         [tensor("x", TensorProto.FLOAT, [3, 0])], [tensor("y", TensorProto.INT64, [3, 1])])
    # An input with a default (an initializer): a buffer input; a default
    # whose type contradicts the input's declaration is refused.
    ten = numpy_helper.from_array(np.array([10, 20, 30], np.float32), "w")
    save(directory, "with_default", [helper.make_node("Mul", ["x", "w"], ["y"])],
         [tensor("x", TensorProto.FLOAT, [3]), tensor("w", TensorProto.FLOAT, [3])],
         [tensor("y", TensorProto.FLOAT, [3])], [ten])
    save(directory, "default_mismatch", [helper.make_node("Mul", ["x", "w"], ["y"])],
         [tensor("x", TensorProto.FLOAT, [3]), tensor("w", TensorProto.FLOAT, [2])],
         [tensor("y", TensorProto.FLOAT, [3])], [ten])
    # A Constant holding a sparse tensor.
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([5], np.float32), "v"),
                                       numpy_helper.from_array(np.array([2], np.int64), "i"), [4])
    save(directory, "sparse_constant", [helper.make_node("Constant", [], ["c"], sparse_value=sparse),
                                        helper.make_node("Identity", ["c"], ["y"])],
         [], [tensor("y", TensorProto.FLOAT, [4])])
    # bfloat16 initializers, two past the importer's inline limit of 1024
    # elements (the weights file) and one inline: ones(2, 600) @ full(600,
    # 2, 0.5) + [1, -2] in bf16 (301 rounds to 300), cast: [[300, 298]] * 2.
    bf16 = lambda name, shape, value: helper.make_tensor(  # noqa: E731
        name, TensorProto.BFLOAT16, shape, [value] * int(np.prod(shape)))
    save(directory, "bf16_weights", [helper.make_node("MatMul", ["a", "w"], ["m"]),
                                     helper.make_node("Add", ["m", "b"], ["s"]),
                                     helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT)],
         [], [tensor("y", TensorProto.FLOAT, [2, 2])],
         [bf16("a", [2, 600], 1.0), bf16("w", [600, 2], 0.5),
          helper.make_tensor("b", TensorProto.BFLOAT16, [2], [1.0, -2.0])])
    with open(os.path.join(directory, "garbage.onnx"), "wb") as f:
        f.write(b"\x08not an onnx model")


if __name__ == "__main__":
    main(sys.argv[1])
