"""The ONNX front end's fuzz target: a seed model (test/onnx's fixtures,
ONNX's backend node test models, the small graphs below), one to three
structure-aware mutations (dims, dtypes, attributes, initializers,
wiring, op types, opset), then the oracles:

(a) python/cgc's onnx_to_ir and write_ir raise nothing but RefusedError
    (in-process, bounded in time and memory); every CLI_EVERY-th case also
    goes through the `cgc` binary, which must exit 0 writing the artifact or
    1 with `<model>.onnx: error:` and no traceback, never a signal;
(b) an accepted model's IR runs in `cgc-opt --interpret` (exit 0, or 1
    with an error: both classed, the latter as a finding) on random inputs,
    and its outputs equal onnx.reference.ReferenceEvaluator's within
    fuzzlib.TOLERANCE (cases the reference cannot run are skipped);
    every EQUIVALENCE_EVERY-th accepted case also runs the default pipeline
    under `cgc-opt --check-equivalence`.
"""
import copy
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import warnings

import numpy as np

import fuzzlib
from onnx_mutations import mutate

CLI_EVERY = 25
EQUIVALENCE_EVERY = 4
DEFAULT_PIPELINE = ("expand-attention,shape-infer,canonicalize,remove-sync-points,cse,dce,fuse-epilogue,"
                    "fuse-rows,fuse-elementwise,schedule,plan-memory")
def hand_built(onnx):
    """Small multi-node graphs the other seeds lack."""
    from onnx import TensorProto as T, helper as h, numpy_helper as nh
    v = h.make_tensor_value_info

    def model(nodes, inputs, outputs, inits=(), opset=18):
        g = h.make_graph(nodes, "hand", inputs, outputs, list(inits))
        return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])

    rng = np.random.default_rng(1)
    w = nh.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    idx = nh.from_array(np.array([2, 0, 1], np.int64), "idx")
    axes = nh.from_array(np.array([1], np.int64), "axes")
    shape = nh.from_array(np.array([3, -1], np.int64), "shape")
    return [
        model([h.make_node("MatMul", ["x", "w"], ["m"]), h.make_node("Relu", ["m"], ["r"]),
               h.make_node("ReduceSum", ["r", "axes"], ["y"], keepdims=0)],
              [v("x", T.FLOAT, [2, 4])], [v("y", T.FLOAT, [2])], [w, axes]),
        model([h.make_node("Gather", ["x", "idx"], ["g"], axis=1),
               h.make_node("Transpose", ["g"], ["t"], perm=[1, 0]),
               h.make_node("Softmax", ["t"], ["y"], axis=0)],
              [v("x", T.FLOAT, [2, 3])], [v("y", T.FLOAT, [3, 2])], [idx]),
        model([h.make_node("Cast", ["x"], ["c"], to=T.INT64),
               h.make_node("Add", ["c", "k"], ["s"]), h.make_node("Reshape", ["s", "shape"], ["r"]),
               h.make_node("ArgMax", ["r"], ["y"], axis=1, keepdims=1)],
              [v("x", T.FLOAT, [6]), v("k", T.INT64, [6])], [v("y", T.INT64, [3, 1])], [shape]),
        model([h.make_node("Less", ["a", "b"], ["c"]), h.make_node("Where", ["c", "a", "b"], ["m"]),
               h.make_node("Concat", ["m", "a"], ["y"], axis=0),
               h.make_node("Split", ["y"], ["p", "q"], axis=0, num_outputs=2)],
              [v("a", T.FLOAT16, [2, 3]), v("b", T.FLOAT16, [2, 3])],
              [v("p", T.FLOAT16, [2, 3]), v("q", T.FLOAT16, [2, 3])], opset=18),
        model([h.make_node("LayerNormalization", ["x", "s", "b"], ["n"], axis=-1),
               h.make_node("Gemm", ["n", "w2"], ["y"], transB=1, alpha=0.5)],
              [v("x", T.FLOAT, [2, 3])], [v("y", T.FLOAT, [2, 4])],
              [nh.from_array(np.ones(3, np.float32), "s"), nh.from_array(np.zeros(3, np.float32), "b"),
               nh.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w2")]),
    ]


class Corpus:
    """Seed models: loaded on demand from their files (with a node
    test's integer inputs sometimes made initializers of their recorded
    values, as shape operands must be constants), or built in memory."""

    def __init__(self, onnx, extra_dirs=()):
        self.onnx = onnx
        self.memory = hand_built(onnx)
        self.fixtures = []
        scratch = tempfile.mkdtemp(prefix="cgc-fuzz-fixtures-")
        sys.path.insert(0, os.path.join(fuzzlib.ROOT, "test", "onnx"))
        import make_fixtures
        make_fixtures.main(scratch)
        self.fixtures = sorted(p for p in glob.glob(os.path.join(scratch, "*.onnx"))
                               if not p.endswith("garbage.onnx"))
        node = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
        self.node_tests = sorted(glob.glob(os.path.join(node, "test_*", "model.onnx")))
        for d in extra_dirs:
            self.fixtures += sorted(glob.glob(os.path.join(d, "*.onnx")))

    def size(self):
        return len(self.memory) + len(self.fixtures) + len(self.node_tests)

    def pick(self, rng):
        """(model, description) of a random seed."""
        k = rng.randrange(self.size())
        if k < len(self.memory):
            return copy.deepcopy(self.memory[k]), f"hand-built #{k}"
        k -= len(self.memory)
        if k < len(self.fixtures):
            return self.onnx.load(self.fixtures[k]), os.path.basename(self.fixtures[k])
        path = self.node_tests[k - len(self.fixtures)]
        model = self.onnx.load(path)
        if rng.random() < 0.6:
            constants_from_data(model, os.path.dirname(path))
        return model, os.path.basename(os.path.dirname(path))


def constants_from_data(model, case):
    """Makes a node test's integer and bool inputs initializers holding
    its first data set's values."""
    from onnx import TensorProto
    inits = {t.name for t in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in inits]
    for k, name in enumerate(names):
        path = os.path.join(case, "test_data_set_0", f"input_{k}.pb")
        if not os.path.exists(path):
            continue
        t = TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        if t.data_type in (TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL):
            t.name = name
            model.graph.initializer.append(t)


# --- the mutator -------------------------------------------------------------

# --- the oracles ---------------------------------------------------------------

def mask_note(model):
    """" (attn_mask of last dim 1)" where an Attention's attn_mask has a last
    dim of 1 and its keys more than one position: ONNX's schema takes such
    a mask as broadcast and as "shorter, padded with -inf" both; its
    function body (which cgc expands) broadcasts it, onnx.reference pads
    it. "" otherwise."""
    from cgc.onnx.functions import static_dims, value_types
    from cgc.onnx.shapes import lenient
    nodes = [n for n in model.graph.node if n.op_type == "Attention" and len(n.input) > 3
             and n.input[3]]
    if not nodes:
        return ""
    types = value_types(lenient(None, model))
    for n in nodes:
        mask, keys = static_dims(types.get(n.input[3])), static_dims(types.get(n.input[1]))
        if mask and keys and len(keys) >= 2 and mask[-1] == 1 and keys[-2] != 1:
            return " (attn_mask of last dim 1)"
    return ""


def run_reference(model, feeds):
    """ReferenceEvaluator(model).run(None, feeds), in a forked child given
    fuzzlib.CASE_SECONDS: its NumPy calls do not return to Python for the
    case's alarm (np.choose over huge GatherElements indices ran for
    minutes). Raises RuntimeError where it fails or runs past that."""
    import pickle
    from cgc.onnx.shapes import end_child, read_all
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read_end)
            signal.alarm(0)
            try:
                from onnx.reference import ReferenceEvaluator
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    reply = ("ok", ReferenceEvaluator(model).run(None, feeds))
                data = pickle.dumps(reply)
            except BaseException as e:  # noqa: BLE001 - passed to the parent
                data = pickle.dumps(("error", f"{type(e).__name__}: {str(e)[:200]}"))
            with os.fdopen(write_end, "wb") as f:
                f.write(data)
        except BaseException:  # noqa: BLE001 - nothing may escape the child
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        reply = read_all(read_end, fuzzlib.CASE_SECONDS)
    finally:
        end_child(pid)  # killed if still running; reaped
    if not reply:
        raise RuntimeError("the reference failed or ran past the case's time")
    try:
        kind, value = pickle.loads(reply)
    except Exception as e:  # noqa: BLE001 - a cut reply is the reference's failure
        raise RuntimeError(f"the reference's reply is unreadable: {e}") from e
    if kind != "ok":
        raise RuntimeError(value)
    return value


# Operators that read their data at run-time indices: op -> (data
# operand, index operand, what range the indices must lie in).
INDEXED = {"Gather": (0, 1, "axis"), "GatherElements": (0, 1, "axis"),
           "NegativeLogLikelihoodLoss": (0, 1, "classes"),
           "SoftmaxCrossEntropyLoss": (0, 1, "classes")}


def nll_note(model):
    """" (ignore_index -1 without weight)" where a NegativeLogLikelihoodLoss
    has no weight operand and an ignore_index of -1: onnx.reference then
    averages over every element (its `elif ignore_index != -1` builds no
    weights), where the spec divides by the weights applied, ignored
    targets weighing 0 (as cgc, and PyTorch's nll_loss). "" otherwise."""
    from onnx import helper
    for n in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "NegativeLogLikelihoodLoss" and \
                (len(n.input) < 3 or not n.input[2]) and attrs.get("ignore_index") == -1:
            return " (ignore_index -1 without weight)"
    return ""


def qk_note(model):
    """" (qk_matmul_output before softcap)" where an Attention with a
    softcap writes its qk_matmul_output in mode 0 or 1 (the product, or the
    product plus the mask, before the softcap, as the spec and ONNX's
    function body say); onnx.reference writes the soft-capped scores in
    those modes. "" otherwise."""
    from onnx import helper
    for n in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "Attention" and len(n.output) > 3 and n.output[3] and \
                attrs.get("softcap", 0.0) and attrs.get("qk_matmul_output_mode", 0) in (0, 1):
            return " (qk_matmul_output before softcap)"
    return ""


def avgpool_note(model):
    """" (AveragePool before opset 7 with padding)" where an AveragePool
    of opset 1 to 6 pads (auto_pad SAME_* or pads): its spec divides each
    window "by the number of elements exclude pad" (as cgc, whose
    count_include_pad defaults to 0); onnx.reference counts the padding at
    those opsets. "" otherwise."""
    from onnx import helper
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset >= 7:
        return ""
    for n in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        auto = attrs.get("auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        if n.op_type == "AveragePool" and (auto.startswith("SAME") or any(attrs.get("pads", []))):
            return " (AveragePool before opset 7 with padding)"
    return ""


def pool_past_input_note(model):
    """" (AveragePool with ceil_mode past the padded input)" where an
    AveragePool with ceil_mode has a window extent past its padded input
    along a dim: cgc takes the one window over the padded input, as
    PyTorch pools (and torch.onnx exports such pools); onnx.reference gives
    NaN or other averages there. "" otherwise."""
    import onnx
    from onnx import helper
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - no shapes: no note
        return ""
    dims = {v.name: [d.dim_value if d.HasField("dim_value") else None
                     for d in v.type.tensor_type.shape.dim]
            for v in list(inferred.graph.input) + list(inferred.graph.value_info)}
    for n in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type != "AveragePool" or not attrs.get("ceil_mode", 0):
            continue
        spatial = (dims.get(n.input[0]) or [])[2:]
        kernel = list(attrs.get("kernel_shape", []))
        pads = list(attrs.get("pads", [0] * 2 * len(kernel)))
        dilations = list(attrs.get("dilations", [1] * len(kernel)))
        if len(spatial) == len(kernel) and len(pads) == 2 * len(kernel) and any(
                d is not None and (k - 1) * dil + 1 > d + pads[i] + pads[i + len(kernel)]
                for i, (d, k, dil) in enumerate(zip(spatial, kernel, dilations))):
            return " (AveragePool with ceil_mode past the padded input)"
    return ""


def batchnorm_note(model):
    """" (BatchNormalization of opsets 7 to 13)" where a BatchNormalization
    of those opsets (one output: test mode, the spec says, as cgc) is run
    by onnx.reference with batch statistics (its BatchNormalization_9
    blends them in whenever momentum is set, as the schema's default sets
    it; opsets 7 and 8 take BatchNormalization_6 without is_test). ""
    otherwise."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if 7 <= opset <= 13 and any(n.op_type == "BatchNormalization" for n in model.graph.node):
        return " (BatchNormalization of opsets 7 to 13)"
    return ""


def indices_note(model, feeds):
    """" (indices out of range at run time)" where a Gather's,
    GatherElements' or a loss's indices (targets), as onnx.reference
    computes them on `feeds`, lie outside their axis ([-n, n); a loss's
    targets outside [0, C) other than its ignore_index): undefined in ONNX
    (cgc reads zeros, onnx.reference wraps or reads elsewhere), so the
    allow-list tells it apart from a wrong result. "" otherwise."""
    from onnx import helper
    nodes = [n for n in model.graph.node if n.op_type in INDEXED and len(n.input) > 1]
    if not nodes:
        return ""
    probe = copy.deepcopy(model)
    listed = {o.name for o in probe.graph.output}
    wanted = []
    for n in nodes:
        data, index, _ = INDEXED[n.op_type]
        wanted += [n.input[data], n.input[index]]
    for name in dict.fromkeys(wanted):
        if name not in listed:
            probe.graph.output.append(helper.make_empty_tensor_value_info(name))
    try:
        results = run_reference(probe, feeds)
    except Exception:  # noqa: BLE001 - the reference cannot tell: no note
        return ""
    values = {o.name: np.asarray(r) for o, r in zip(probe.graph.output, results)}
    for n in nodes:
        data, index, kind = INDEXED[n.op_type]
        shape, indices = values[n.input[data]].shape, values[n.input[index]].reshape(-1)
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if kind == "axis":
            axis = attrs.get("axis", 0)
            if not -len(shape) <= axis < len(shape):
                continue
            extent = shape[axis]
            outside = (indices < -extent) | (indices >= extent)
        else:
            if len(shape) < 2:
                continue
            outside = ((indices < 0) | (indices >= shape[1])) & \
                (indices != attrs.get("ignore_index", -(1 << 63)))
        if outside.any():
            return " (indices out of range at run time)"
    return ""


def located_at_onnx_node(stderr):
    """True when cgc-opt's first error on the imported IR is followed by the
    note naming the ONNX node its IR node comes from (the importer stamps
    each node's `loc`), which `cgc model.onnx` turns into `model.onnx:
    error: node 'X' (Op): ...`: a clean located refusal (issue 27), not a
    finding. An error the note does not follow (about the graph's outputs,
    a malformed record) is still an ir-error finding."""
    lines = stderr.splitlines()
    first = next((k for k, line in enumerate(lines) if ": error: node '" in line), None)
    if first is None:
        return False
    for line in lines[first + 1:]:
        if ": error:" in line:
            return False
        if ": note: node '" in line and "' comes from node '" in line:
            return True
    return False


class Target:
    name = "onnx"
    suffix = ".onnx"

    def __init__(self, args):
        import onnx
        from cgc.errors import RefusedError
        from cgc.onnx.importer import onnx_to_ir, write_ir
        from cgc.onnx.importer import UNMAPPED
        from cgc.safetensors import read_safetensors, write_safetensors
        self.onnx, self.onnx_to_ir, self.write_ir = onnx, onnx_to_ir, write_ir
        self.RefusedError, self.UNMAPPED = RefusedError, UNMAPPED
        self.read_st, self.write_st = read_safetensors, write_safetensors
        self.cgc_opt, self.cgc = args.cgc_opt, args.cgc
        self.corpus = None
        self.cli_every = CLI_EVERY  # None: never (replay sets it per input)
        self.stats = {"cases": 0, "refused": 0, "accepted": 0, "compared": 0,
                      "reference failed": 0, "cli": 0, "equivalence": 0,
                      "refused by the verifier": 0}

    def generate(self, rng):
        """(model bytes, description) of one mutated seed."""
        if self.corpus is None:
            self.corpus = Corpus(self.onnx)
        model, seed = self.corpus.pick(rng)
        done = mutate(model, rng)
        return model.SerializeToString(), f"seed {seed}; " + "; ".join(done)

    def ops_of(self, model):
        ops = sorted({n.op_type for n in model.graph.node})
        return "+".join(ops[:3]) + ("+…" if len(ops) > 3 else "") if ops else "-"

    def check(self, data, rng, work, findings, where):
        """Runs the oracles on one serialized model."""
        self.stats["cases"] += 1
        try:
            model = self.onnx.ModelProto()
            model.ParseFromString(data)
        except Exception:  # noqa: BLE001 - a mutation cannot make bytes unparsable
            return
        ops = self.ops_of(model)
        path = os.path.join(work, "model.json")
        for f in os.listdir(work):  # the last case's files (replay keeps findings/ here)
            if os.path.isfile(os.path.join(work, f)):
                os.remove(os.path.join(work, f))
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                ir, weights = fuzzlib.bounded(self.onnx_to_ir, model, name="fuzz")
                fuzzlib.bounded(self.write_ir, ir, weights, path)
        except self.RefusedError as e:
            self.stats["refused"] += 1
            findings.refused(fuzzlib.pattern(e))
            if e.__cause__ is not None and self.UNMAPPED in str(e):
                # The importer's last-resort refusal: a rule lacks a check.
                cause = e.__cause__
                op = fuzzlib.node_op_of(cause) if fuzzlib.node_op_of(cause) != "-" else ops
                cause = fuzzlib.exception_class(cause, op).split(" | ", 1)[1]
                findings.add("unmapped | " + cause, data, self.suffix, where, str(e)[:300])
            ir = None
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - oracle (a)
            op = fuzzlib.node_op_of(e) if fuzzlib.node_op_of(e) != "-" else ops
            findings.add(fuzzlib.exception_class(e, op), data, self.suffix, where,
                         f"{type(e).__name__}: {str(e)[:300]}")
            ir = None
        if self.cgc and self.cli_every and self.stats["cases"] % self.cli_every == 1 % self.cli_every:
            self.check_cli(data, ops, work, findings, where)
        if ir is not None:
            self.stats["accepted"] += 1
            self.check_values(model, ir, ops, rng, work, findings, data, where)

    def check_cli(self, data, ops, work, findings, where):
        self.stats["cli"] += 1
        model_path = os.path.join(work, "fuzz.onnx")
        out = os.path.join(work, "fuzz.cgc")
        with open(model_path, "wb") as f:
            f.write(data)
        try:
            r = subprocess.run([self.cgc, model_path, "-o", out], capture_output=True, text=True,
                               timeout=120)
            rc, stderr = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            rc, stderr = -999, ""
        failure = fuzzlib.tool_failure(rc, stderr)
        if failure is None and rc == 1:
            line = fuzzlib.error_line(stderr)
            if not line.startswith(model_path + ": error:"):
                failure = "unlocated message: " + fuzzlib.pattern(line)
            elif os.path.exists(out):
                failure = "refused but wrote the output"
        elif failure is None and not os.path.exists(out):
            failure = "exit 0 without the output"
        if failure:
            findings.add(f"cli | {ops} | {failure}", data, self.suffix, where, stderr[-500:])

    def check_values(self, model, ir, ops, rng, work, findings, data, where):
        """Oracle (b): the interpreter against the ONNX reference."""
        inits = {t.name for t in model.graph.initializer}
        onnx_inputs = [vi.name for vi in model.graph.input if vi.name not in inits]
        user = [i for i in ir["inputs"] if i.get("kind", "user_input") == "user_input"]
        if len(user) != len(onnx_inputs):
            findings.add(f"io | {ops} | {len(onnx_inputs)} ONNX inputs, {len(user)} IR inputs",
                         data, self.suffix, where)
            return
        feeds, run_inputs = {}, {}
        for spec, name in zip(user, onnx_inputs):
            shape = spec["shape"]
            if any(not isinstance(d, int) for d in shape):
                return
            if any(d < 0 for d in shape):
                findings.add(f"accepted | {ops} | an input with a negative dim", data,
                             self.suffix, where, str(spec))
                return
            if np.prod(shape, dtype=np.float64) > 1 << 22:
                return  # too large to run as a fuzz case
            array = fuzzlib.random_array(rng, spec["dtype"], shape)
            if array is None:
                return
            feeds[name], run_inputs[spec["name"]] = array, array
        path = os.path.join(work, "model.json")
        inputs, outputs = os.path.join(work, "in.safetensors"), os.path.join(work, "out.safetensors")
        self.write_st(inputs, run_inputs)
        rc, _, stderr = fuzzlib.run_cgc_opt(self.cgc_opt, [path, "--interpret", "--inputs", inputs,
                                                           "--outputs", outputs])
        failure = fuzzlib.tool_failure(rc, stderr)
        if failure:
            findings.add(f"cgc-opt | {ops} | {failure}", data, self.suffix, where, stderr[-500:])
            return
        if rc == 1:
            if located_at_onnx_node(stderr):
                self.stats["refused by the verifier"] += 1
                findings.refused("verifier: " + fuzzlib.pattern(fuzzlib.error_line(stderr)))
            else:
                findings.add(f"ir-error | {ops} | {fuzzlib.pattern(fuzzlib.error_line(stderr))}",
                             data, self.suffix, where, stderr[-500:])
            return
        if self.stats["accepted"] % EQUIVALENCE_EVERY == 1:
            self.check_equivalence(path, ops, findings, data, where)
        want = self.reference(model, feeds)
        if want is None:
            return
        self.stats["compared"] += 1
        got = self.read_st(outputs)
        names = [o if isinstance(o, str) else o["name"] for o in ir["outputs"]]
        for k, (name, w) in enumerate(zip(names, want)):
            if w is None or not isinstance(w, np.ndarray) or w.dtype.kind in "OUSc":
                continue
            problem = fuzzlib.compare(got.get(name), w)
            if problem:
                problem += indices_note(model, feeds) + mask_note(model) + nll_note(model) + \
                    qk_note(model) + avgpool_note(model) + pool_past_input_note(model) + \
                    batchnorm_note(model)
                findings.add(f"wrong | {ops} | output {problem}", data, self.suffix, where,
                             fuzzlib.describe_difference(got.get(name), w))
                return

    def check_equivalence(self, path, ops, findings, data, where):
        self.stats["equivalence"] += 1
        rc, stdout, stderr = fuzzlib.run_cgc_opt(
            self.cgc_opt, [path, "--passes=" + DEFAULT_PIPELINE, "--check-equivalence", "--trials=2"])
        failure = fuzzlib.tool_failure(rc, stderr)
        if failure is None and rc == 1:
            failure = "refused: " + fuzzlib.pattern(fuzzlib.error_line(stderr))
        elif failure is None and "check-equivalence: PASS" not in stdout:
            failure = "no PASS: " + fuzzlib.pattern(stdout.strip().splitlines()[-1] if stdout.strip() else "")
        if failure:
            findings.add(f"pipeline | {ops} | {failure}", data, self.suffix, where,
                         (stdout + stderr)[-500:])

    def reference(self, model, feeds):
        """ReferenceEvaluator's outputs, or None where it cannot run the
        model (its own refusals are not cgc's findings)."""
        try:
            return run_reference(model, feeds)
        except RuntimeError:  # the reference's own failure, counted (a fuzzer
            self.stats["reference failed"] += 1  # bug, ImportError say, is not)
            return None
