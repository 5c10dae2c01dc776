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
indices known at run time; and Einsum, ScatterElements and ScatterND in
f32, f16 and integers (ONNX's node tests have Einsum in float64 only).

REFERENCE_WRONG: where ONNX's reference evaluator is itself wrong, the
case states its expected outputs (computed in float64 here) or the model
the reference reads: Softplus is log(exp(x) + 1) there (inf from x = 89 in
f32, 12 in f16); ReduceLogSumExp of all -inf is NaN there (-inf is
right); it cannot read sparse initializers (it gets the dense model);
it fails on a model-local function calling another with an attribute
reference (NumPy computes what the functions say); its ScatterND with
reduction max or min fails for indices of more than one coordinate; its
AveragePool with ceil_mode and a kernel past the padded input averages
neither what PyTorch (whose export writes such pools) nor the valid
elements give.

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
    yield from einsum_cases(model, helper, vi)
    yield from scatter_cases(model, helper, vi)
    yield from pool_past_input_cases(model, helper, vi)


def einsum_cases(model, helper, vi):
    """Einsum in f32 (ONNX's own node tests are all float64): batched
    products, an inner and an outer product, the implicit output, an
    ellipsis broadcast across operands, a transpose, a sum, three operands,
    a contraction of a dim of extent 1 against a longer one, integers."""
    from onnx import TensorProto as T
    rng = np.random.default_rng(7)
    for k, (equation, shapes, elem) in enumerate((
            ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], T.FLOAT),
            ("bnid,bnjd->bnij", [(2, 3, 4, 8), (2, 3, 5, 8)], T.FLOAT),
            ("i,i", [(6,), (6,)], T.FLOAT),
            ("i,j->ij", [(3,), (4,)], T.FLOAT),
            ("ij,jk", [(3, 4), (4, 2)], T.FLOAT),
            ("...ij,...jk->...ik", [(2, 1, 3, 4), (2, 5, 4, 2)], T.FLOAT),
            ("ij->ji", [(3, 4)], T.FLOAT),
            ("ijk->j", [(2, 3, 4)], T.FLOAT),
            ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 5)], T.FLOAT),
            ("ij,kj->ik", [(3, 1), (4, 6)], T.FLOAT),
            ("bhwc,hkc->bhwk", [(2, 3, 4, 5), (3, 6, 5)], T.FLOAT),
            ("ij,ij->i", [(3, 4), (3, 4)], T.INT64))):
        np_type = np.float32 if elem == T.FLOAT else np.int64
        feeds = {f"x{j}": (rng.standard_normal(s) * 4).astype(np_type) for j, s in enumerate(shapes)}
        yield (f"einsum_{k}_{equation.replace(',', '_').replace('->', '_to_').replace('...', 'E')}",
               model([helper.make_node("Einsum", list(feeds), ["y"], equation=equation)],
                     [vi(n, elem, list(v.shape)) for n, v in feeds.items()], [vi("y", elem, None)]),
               feeds, None)


def scatter_cases(model, helper, vi):
    """ScatterElements and ScatterND (and GatherElements, which shares
    their positions) with indices given at run time: negative indices
    wrap, an index smaller than the data on the other axes, every
    reduction, f16 and integer data."""
    from onnx import TensorProto as T
    rng = np.random.default_rng(11)
    data = rng.standard_normal((4, 5)).astype(np.float32)
    idx = np.array([[1, -1, 0], [3, 2, -4]], np.int64)    # [2, 3] into [4, 5] along axis 0
    upd = rng.standard_normal((2, 3)).astype(np.float32)
    for reduction in ("none", "add", "mul", "max", "min"):
        for elem, np_type in ((T.FLOAT, np.float32), (T.FLOAT16, np.float16), (T.INT32, np.int32)):
            if reduction == "mul" and elem == T.INT32:
                continue  # cgc's prod takes floats (refused by name)
            d, u = (data * 10).astype(np_type), (upd * 10).astype(np_type)
            for axis, index in ((0, idx), (1, np.array([[4, -5, 4], [0, 1, 2]], np.int64))):
                yield (f"scatter_elements_{reduction}_{np.dtype(np_type).name}_axis{axis}",
                       model([helper.make_node("ScatterElements", ["d", "i", "u"], ["y"],
                                               axis=axis, reduction=reduction)],
                             [vi("d", elem, [4, 5]), vi("i", T.INT64, [2, 3]),
                              vi("u", elem, [2, 3])], [vi("y", elem, None)]),
                       {"d": d, "i": index, "u": u}, None)
    for axis, index in ((0, rng.integers(-4, 4, (2, 5))), (1, rng.integers(-5, 5, (4, 3)))):
        yield (f"gather_elements_runtime_axis{axis}",
               model([helper.make_node("GatherElements", ["d", "i"], ["y"], axis=axis)],
                     [vi("d", T.FLOAT, [4, 5]), vi("i", T.INT64, list(index.shape))],
                     [vi("y", T.FLOAT, None)]),
               {"d": data, "i": index.astype(np.int64)}, None)
    cube = rng.standard_normal((3, 4, 2)).astype(np.float32)
    for reduction in ("none", "add", "mul", "max", "min"):
        for index, updates in ((np.array([[2, -1], [0, 0], [1, 3]], np.int64), (3, 2)),
                               (np.array([[-1], [1]], np.int64), (2, 4, 2))):
            feeds = {"d": cube, "i": index, "u": rng.standard_normal(updates).astype(np.float32)}
            yield (f"scatter_nd_{reduction}_k{index.shape[-1]}",
                   model([helper.make_node("ScatterND", ["d", "i", "u"], ["y"],
                                           reduction=reduction)],
                         [vi("d", T.FLOAT, [3, 4, 2]), vi("i", T.INT64, list(index.shape)),
                          vi("u", T.FLOAT, list(updates))], [vi("y", T.FLOAT, None)]),
                   feeds, scatter_nd_max_min(feeds, reduction))


def scatter_nd_max_min(feeds, reduction):
    """ScatterND's max and min computed here (REFERENCE_WRONG: the
    reference indexes the output by the index array, not its tuple, and
    fails for k > 1); None for the other reductions."""
    if reduction not in ("max", "min"):
        return None
    out, pick = feeds["d"].copy(), np.maximum if reduction == "max" else np.minimum
    for k in np.ndindex(feeds["i"].shape[:-1]):
        at = tuple(feeds["i"][k])
        out[at] = pick(out[at], feeds["u"][k])
    return [out]


def pool_past_input_cases(model, helper, vi):
    """AveragePool with ceil_mode and a kernel past the padded input (what
    torch.onnx writes for EfficientNet's AvgPool2d(1280, ceil_mode=True)):
    one window over the padded input, divided as PyTorch divides it (the
    valid count, or with count_include_pad the padded extent)."""
    from onnx import TensorProto as T
    x = (np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4) - 7) / 5
    sums = x.astype(np.float64).sum((2, 3), keepdims=True)
    for pad in (0, 1):
        for include in (0, 1):
            divisor = (3 + 2 * pad) * (4 + 2 * pad) if include else 12
            node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[9, 9],
                                    strides=[9, 9], pads=[pad] * 4, ceil_mode=1,
                                    count_include_pad=include)
            yield (f"average_pool_past_input_pad{pad}_include{include}",
                   model([node], [vi("x", T.FLOAT, [1, 2, 3, 4])], [vi("y", T.FLOAT, None)]),
                   {"x": x}, [(sums / divisor).astype(np.float32)])


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
