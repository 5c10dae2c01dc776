#!/usr/bin/env python3
"""The importer's numerics and exporter forms against ONNX's own reference
(onnx.reference.ReferenceEvaluator): each case is a small model built
here, imported by python/cgc, run by the reference interpreter
(`cgc-opt --interpret`) and compared output by output (f32 within rtol
1e-5 + atol 1e-6, f16 within 1e-3, integers exactly; shapes and dtypes
equal). The cases are the classes the importer once got wrong: log-sum-exp
and softplus of large inputs, Mod with fmod = 1 on floats and Mod of
integers, casts folded at import, sparse initializers, model-local
functions, inputs with a default (an initializer) and GatherND with
indices known at run time.

REFERENCE_WRONG: where ONNX's reference evaluator is itself wrong, the
case states its expected outputs (computed in float64 here) or the model
the reference reads: Softplus is log(exp(x) + 1) there (inf from x = 89 in
f32, 12 in f16); ReduceLogSumExp of all -inf is NaN there (-inf is
right); it cannot read sparse initializers (it gets the dense model);
it fails on a model-local function calling another with an attribute
reference (NumPy computes what the functions say).

Usage: differential.py --cgc-opt PATH [--filter TEXT]
Exit status 1 naming each case that differs; 77 (skipped) without onnx.
"""
import argparse, os, subprocess, sys, tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def cases():
    """(name, model, feeds, oracle) of every case: the oracle is None
    (ONNX's reference evaluator on the model), another model for the
    reference evaluator, or the expected outputs where the reference
    itself is wrong (REFERENCE_WRONG)."""
    from onnx import TensorProto as T, helper, numpy_helper
    vi = helper.make_tensor_value_info
    F, H, I32, I64 = T.FLOAT, T.FLOAT16, T.INT32, T.INT64
    np_of = {F: np.float32, H: np.float16, I32: np.int32, I64: np.int64}

    def model(nodes, inputs, outputs, inits=(), functions=(), sparse=(), opset=20, extra=()):
        graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits),
                                  sparse_initializer=list(sparse))
        return helper.make_model(graph, functions=list(functions),
                                 opset_imports=[helper.make_opsetid("", opset), *extra])

    def unary(op, elem, x, **attrs):
        return model([helper.make_node(op, ["x"], ["y"], **attrs)], [vi("x", elem, list(x.shape))],
                     [vi("y", elem, None)]), {"x": x}

    big = np.array([[100, 100, 99], [-100, 0, 1], [88.5, 90, -1e30]], np.float32)
    for elem in (F, H):
        x = big if elem == F else np.array([[11, 12, 11.5], [-12, 0, 1], [30, 30, 30]], np.float16)
        for keep in (0, 1):
            yield (f"reduce_log_sum_exp_{np_of[elem].__name__}_keep{keep}",
                   *reduce_lse(model, helper, vi, elem, x, keep), None)
        exact = np.logaddexp(0, x.astype(np.float64)).astype(x.dtype)
        yield f"softplus_{np_of[elem].__name__}", *unary("Softplus", elem, x), [exact]
        yield f"mish_{np_of[elem].__name__}", *unary("Mish", elem, x), None
    inf = np.array([[-np.inf, -np.inf], [np.inf, 1]], np.float32)
    yield ("reduce_log_sum_exp_infinities", *reduce_lse(model, helper, vi, F, inf, 0),
           [np.array([-np.inf, np.inf], np.float32)])

    # Mod with fmod = 1 on floats: C's fmod (the sign of the dividend).
    a = np.array([7, -7, 7, -7, 5.5, 1e10, -0.0, 3], np.float32)
    b = np.array([0.1, 0.1, -0.1, -0.1, 1.25, 3.3, 2, np.inf], np.float32)
    a16 = np.array([7, -7, 7, -7, 5.5, 6e4, -0.0, 3], np.float16)
    for elem in (F, H):
        yield (f"mod_fmod_{np_of[elem].__name__}",
               model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=1)],
                     [vi("a", elem, [8]), vi("b", elem, [8])], [vi("y", elem, [8])]),
               {"a": a if elem == F else a16, "b": b.astype(np_of[elem])}, None)
    # Mod of integers: fmod = 0 takes the divisor's sign, fmod = 1 the dividend's.
    ia = np.array([7, -7, 7, -7, 0, 2 ** 31 - 1, -2 ** 31, 5], np.int64)
    ib = np.array([3, 3, -3, -3, 5, 7, -1, 5], np.int64)
    for elem in (I32, I64):
        for fmod in (0, 1):
            yield (f"mod_{np_of[elem].__name__}_fmod{fmod}",
                   model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)],
                         [vi("a", elem, [8]), vi("b", elem, [8])], [vi("y", elem, [8])]),
                   {"a": ia.astype(np_of[elem]), "b": ib.astype(np_of[elem])}, None)
    # A cast folded at import wraps as ONNX's (int64 -> int32).
    wide = numpy_helper.from_array(np.array([2 ** 32 + 5, 2 ** 31, -2 ** 31 - 1], np.int64), "w")
    yield ("cast_folded_wraps",
           model([helper.make_node("Cast", ["w"], ["c"], to=I32),
                  helper.make_node("Add", ["x", "c"], ["y"])],
                 [vi("x", I32, [3])], [vi("y", I32, [3])], [wide]),
           {"x": np.array([1, 0, 0], np.int32)}, None)
    # A sparse initializer (coordinates and linear indices).
    values = numpy_helper.from_array(np.array([1.5, -2, 3], np.float32), "s")
    coords = numpy_helper.from_array(np.array([[0, 1], [1, 0], [2, 2]], np.int64), "s_idx")
    sparse2d = helper.make_sparse_tensor(values, coords, [3, 3])
    lvalues = numpy_helper.from_array(np.array([4, 5], np.float32), "l")
    linear = numpy_helper.from_array(np.array([0, 2], np.int64), "l_idx")
    sparse1d = helper.make_sparse_tensor(lvalues, linear, [3])
    adds = [helper.make_node("Add", ["x", "s"], ["t"]), helper.make_node("Add", ["t", "l"], ["y"])]
    dense = [numpy_helper.from_array(np.array([[0, 1.5, 0], [-2, 0, 0], [0, 0, 3]], np.float32), "s"),
             numpy_helper.from_array(np.array([4, 0, 5], np.float32), "l")]
    yield ("sparse_initializers",
           model(adds, [vi("x", F, [3, 3])], [vi("y", F, [3, 3])], sparse=[sparse2d, sparse1d]),
           {"x": np.arange(9, dtype=np.float32).reshape(3, 3)},
           model(adds, [vi("x", F, [3, 3])], [vi("y", F, [3, 3])], dense))
    # Model-local functions: nested calls, attribute references, names
    # that clash with the graph's.
    def outer(a, alpha):  # what the functions below compute
        t = a * np.float32(2)
        return np.where(t < 0, t * np.float32(alpha), t) + t
    m, feeds = local_functions(model, helper, vi, F)
    yield "local_functions", m, feeds, [outer(outer(feeds["x"], 0.25), 0.5)]
    # An input with a default (an initializer): the default, then a value given.
    w = numpy_helper.from_array(np.array([10, 20, 30], np.float32), "w")
    with_default = model([helper.make_node("Mul", ["x", "w"], ["y"])],
                         [vi("x", F, [3]), vi("w", F, [3])], [vi("y", F, [3])], [w])
    x = np.array([1, 2, 3], np.float32)
    yield "input_default_used", with_default, {"x": x}, None
    yield ("input_default_replaced", with_default,
           {"x": x, "w": np.array([-1, 0.5, 2], np.float32)}, None)
    # GatherND with indices given at run time: negative components wrap,
    # batch_dims 0 and 1, whole rows and single elements (what
    # torch.onnx.export writes for advanced indexing).
    data = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    for b, idx in ((0, np.array([[1, -1], [0, 2], [-2, 0]], np.int64)),
                   (0, np.array([[[1, 2, 3]], [[-1, -3, -4]]], np.int64)),
                   (1, np.array([[2], [-3]], np.int64)),
                   (1, np.array([[[0, 3], [2, -1]], [[1, 1], [-3, 0]]], np.int64))):
        yield (f"gather_nd_b{b}_k{idx.shape[-1]}_rank{idx.ndim}",
               model([helper.make_node("GatherND", ["d", "i"], ["y"], batch_dims=b)],
                     [vi("d", F, list(data.shape)), vi("i", I64, list(idx.shape))], [vi("y", F, None)]),
               {"d": data, "i": idx}, None)


def reduce_lse(model, helper, vi, elem, x, keep):
    from onnx import numpy_helper
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    m = model([helper.make_node("ReduceLogSumExp", ["x", "axes"], ["y"], keepdims=keep)],
              [vi("x", elem, list(x.shape))], [vi("y", elem, None)], [axes])
    return m, {"x": x}


def local_functions(model, h, vi, F):
    import onnx

    def with_ref(node, name, kind):
        node.attribute.append(h.make_attribute_ref(name, kind))
        return node
    dom = [h.make_opsetid("", 20), h.make_opsetid("local", 1)]
    # inner(a) = LeakyRelu(a, alpha=@alpha); outer(a) = inner(a * 2) + t
    # (t: a name the graph uses too), alpha taken from the call site.
    inner = h.make_function("local", "Inner", ["a"], ["b"],
                            [with_ref(h.make_node("LeakyRelu", ["a"], ["b"]), "alpha",
                                      onnx.AttributeProto.FLOAT)],
                            dom, attributes=["alpha"])
    outer = h.make_function("local", "Outer", ["a"], ["b"],
                            [h.make_node("Constant", [], ["two"], value_float=2.0),
                             h.make_node("Mul", ["a", "two"], ["t"]),
                             with_ref(h.make_node("Inner", ["t"], ["u"], domain="local"),
                                      "alpha", onnx.AttributeProto.FLOAT),
                             h.make_node("Add", ["u", "t"], ["b"])],
                            dom, attributes=["alpha"])
    m = model([h.make_node("Outer", ["x"], ["t"], domain="local", alpha=0.25),
               h.make_node("Outer", ["t"], ["y"], domain="local", alpha=0.5)],
              [vi("x", F, [4])], [vi("y", F, [4])], functions=[inner, outer],
              extra=[h.make_opsetid("local", 1)])
    return m, {"x": np.array([-4, -1, 0.5, 3], np.float32)}


def expected(model, feeds, oracle):
    import onnx
    from onnx.reference import ReferenceEvaluator
    if isinstance(oracle, list):
        return oracle
    with np.errstate(all="ignore"):
        return ReferenceEvaluator(oracle if isinstance(oracle, onnx.ModelProto) else model).run(
            None, feeds)


def run(name, model, feeds, oracle, cgc_opt, work):
    """'' when cgc's outputs equal the oracle's, else what differs."""
    import cgc
    from cgc.safetensors import read_safetensors, write_safetensors
    want = expected(model, feeds, oracle)
    ir, weights = cgc.onnx_to_ir(model, name=name)
    path = os.path.join(work, name + ".json")
    cgc.write_ir(ir, weights, path)
    given = {}
    for spec in ir["inputs"]:  # user inputs, and inputs with a default when given
        if spec["name"] in feeds:
            given[spec["name"]] = feeds[spec["name"]]
    ins, outs = os.path.join(work, name + ".in.safetensors"), os.path.join(work, name + ".out.safetensors")
    write_safetensors(ins, given)
    r = subprocess.run([cgc_opt, path, "--interpret", "--inputs", ins, "--outputs", outs],
                       capture_output=True, text=True)
    if r.returncode:
        return f"cgc-opt failed: {r.stderr.strip()[-300:]}"
    got = read_safetensors(outs)
    names = [o if isinstance(o, str) else o["name"] for o in ir["outputs"]]
    for out, w in zip(names, want):
        g = got.get(out)
        if g is None:
            return f"'{out}': missing"
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"'{out}': {g.dtype}{list(g.shape)} != {w.dtype}{list(w.shape)}"
        if w.dtype.kind == "f":
            tol = 1e-3 if w.dtype == np.float16 else 1e-5
            if not np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol,
                               atol=tol / 10, equal_nan=True):
                return f"'{out}': {g.tolist()} != {w.tolist()}"
        elif not np.array_equal(g, w):
            return f"'{out}': {g.tolist()} != {w.tolist()}"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc-opt", required=True)
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("skipped: onnx is not installed")
        return 77
    failed = 0
    with tempfile.TemporaryDirectory(prefix="cgc-onnx-diff-") as work:
        for name, model, feeds, oracle in cases():
            if args.filter not in name:
                continue
            try:
                problem = run(name, model, feeds, oracle, args.cgc_opt, work)
            except Exception as e:  # noqa: BLE001 - a refusal or a crash: the case failed
                problem = f"{type(e).__name__}: {e}"
            print(f"{'ok   ' if not problem else 'WRONG'} {name}" + (f": {problem}" if problem else ""))
            failed += bool(problem)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
