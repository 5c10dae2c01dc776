"""Declared shapes checked, never trusted.

The importer's types come from ONNX's strict shape inference run on the
model with every declaration dropped (value_info and the graph outputs'
types): what the operators compute from the inputs. Each declaration is
then compared with what was computed: an element type that differs, a
rank that differs, or a static dim that differs from a computed static
dim is refused, naming the node that computes the value and both types.
A declared dim that is symbolic (or unknown) agrees with anything; a
declared static dim fills in only a dim inference left unknown (cgc's
verifier checks the IR it becomes).

Strict inference also refuses a model whose operators' types do not fit
(check_type). A model with operators of other domains (no schema), or
whose error arises inside the body of a function operator, is inferred
leniently: those operators are refused by name, or expanded, later.
"""
import os
import pickle
import re
import signal

from .elem_types import ONNX_TYPE_NAMES
from ..errors import RefusedError


def computed_model(model):
    """`model` with the types its operators compute (see the module's
    docstring); raises RefusedError for a declaration that disagrees."""
    import onnx
    from onnx import shape_inference
    check_input_defaults(onnx, model)
    bare = onnx.ModelProto.FromString(model.SerializeToString())
    del bare.graph.value_info[:]
    for vi in bare.graph.output:
        vi.type.Clear()
    try:
        inferred = inferred_strictly(bare)
    except shape_inference.InferenceError as e:
        if not all_known_domains(model) or in_function_body(str(e)):
            inferred = lenient(shape_inference, bare)
        else:
            raise RefusedError(located_inference_error(model, str(e))) from None
    except MemoryError:  # ONNX's C++ inference allocating for a dim declared huge
        raise RefusedError("ONNX's shape inference ran out of memory on this model (a dim "
                           "declared or computed far larger than cgc's limits)") from None
    computed = types_of(inferred)
    check_declarations(model, computed)
    merge_declarations(model, inferred, computed)
    return inferred


def check_input_defaults(onnx, model):
    """An input that has an initializer (its default) may not be declared
    with another type."""
    inputs = {vi.name: vi for vi in model.graph.input}
    for t in model.graph.initializer:
        vi = inputs.get(t.name)
        if vi is None or not vi.type.HasField("tensor_type"):
            continue
        given = onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims))
        if disagreement(vi.type, given):
            raise RefusedError(f"input '{vi.name}' is declared {type_text(vi.type)}, but its "
                               f"initializer (its default) is {type_text(given)}")


# ONNX's data propagation (shape arithmetic carried through Shape, Gather,
# Concat, ...) can take minutes where a 1-D tensor is long (onnx 1.22: an
# Unsqueeze of a [2^31] input), while inference without it takes
# milliseconds: after this many seconds it is given up and inference runs
# without it (the importer folds shape arithmetic itself, onnx_import.FOLDED).
DATA_PROP_SECONDS = 10
# The memory ONNX's inference may take beyond the importer's own, plus 4
# times the model's size (its serialized copies): onnx 1.22 allocates per
# element of a long 1-D operand it reads as a shape (an AffineGrid size of
# [2^31] took 70 GB); past it, its child fails and the model is refused.
INFERENCE_MEMORY_BYTES = 1 << 30


def inferred_strictly(model):
    try:
        return infer_isolated(model, DATA_PROP_SECONDS, check_type=True, strict_mode=True,
                              data_prop=True)
    except InferenceTimeout:
        return infer_isolated(model, check_type=True, strict_mode=True)


class InferenceTimeout(Exception):
    """ONNX's shape inference ran past the time it was given."""


def lenient(shape_inference, model):
    try:
        try:
            return infer_isolated(model, DATA_PROP_SECONDS, strict_mode=False, data_prop=True)
        except InferenceTimeout:
            return infer_isolated(model, strict_mode=False)
    except RefusedError:
        raise
    except Exception:  # noqa: BLE001 - left to the importer's own refusals
        return model


def infer_isolated(model, seconds=None, **options):
    """onnx.shape_inference.infer_shapes(model, **options), run in a forked
    child process: ONNX's C++ inference crashes on some malformed nodes
    (a SIGSEGV in onnx 1.22), and a signal in the child becomes a
    RefusedError here instead of ending the import. InferenceError and
    MemoryError are raised here as the child met them (a ValueError or
    TypeError of ONNX's Python wrapper, such as "Invalid tensor data type
    0", as an InferenceError); past `seconds`
    (None: no limit) the child is killed and InferenceTimeout raised.

    Cost: the fork (copy-on-write, no copy of the parent's memory) and
    one more serialization and parse of the inferred model through a pipe,
    linear in the model's size, next to the two that infer_shapes itself
    makes of a ModelProto. Without os.fork it runs in this process."""
    from onnx import ModelProto, shape_inference
    if not hasattr(os, "fork"):
        return shape_inference.infer_shapes(model, **options)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's cleanup
        os.close(read_end)
        inference_child(write_end, lambda: shape_inference.infer_shapes(model, **options),
                        INFERENCE_MEMORY_BYTES + 4 * model.ByteSize())
    os.close(write_end)
    try:
        reply = read_all(read_end, seconds)
        if reply is None:
            end_child(pid)
            raise InferenceTimeout()
        _, status = os.waitpid(pid, 0)
    except BaseException:  # a timeout, a signal or an alarm here: the child ends too
        end_child(pid)
        raise
    if os.WIFSIGNALED(status) or not reply:
        raise RefusedError(inference_crash_message(status))
    kind, body = reply[:1], reply[1:]
    if kind == b"M":
        raise MemoryError()
    if kind == b"I":
        raise shape_inference.InferenceError(body.decode("utf-8", "replace"))
    if kind == b"E":
        error = pickle.loads(body)
        if isinstance(error, (ValueError, TypeError)):  # ONNX's wrapper refusing the model
            raise shape_inference.InferenceError(f"{type(error).__name__}: {error}")
        raise error
    return ModelProto.FromString(body)


def read_all(fd, seconds):
    """Everything until end of file on `fd` (which it closes), or None
    when that takes more than `seconds` (None: no limit)."""
    import select
    import time
    deadline = None if seconds is None else time.monotonic() + seconds
    chunks = []
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([pipe], [], [], left)[0]:
                    return None
            chunk = pipe.read(1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def end_child(pid):
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):  # already reaped
        pass


def cap_memory(extra):
    """Limits this process's address space to what it maps now plus
    `extra` bytes (or less, where a limit is already lower)."""
    import resource
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mapped + extra
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft == resource.RLIM_INFINITY or limit < soft:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def inference_child(fd, infer, memory):
    """Writes to `fd` one reply: b"O" and the inferred model, b"I" and an
    InferenceError's message, b"M" (out of memory: past `memory` bytes
    more than the parent's) or b"E" and another error, pickled; then ends
    the process with os._exit."""
    import faulthandler
    from onnx import shape_inference
    code = 0
    try:
        faulthandler.disable()  # a crash is reported by the parent, in one line
        try:
            cap_memory(memory)
        except (OSError, ValueError):  # no /proc: no cap
            pass
        for signum in (signal.SIGINT, signal.SIGTERM):  # the parent handles these
            signal.signal(signum, signal.SIG_DFL)
        try:
            reply = b"O" + infer().SerializeToString()
        except shape_inference.InferenceError as e:
            reply = b"I" + str(e).encode("utf-8", "replace")
        except MemoryError:
            reply = b"M"
        except Exception as e:  # noqa: BLE001 - passed to the parent
            reply = b"E" + picklable(e)
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(reply)
    except BaseException:  # noqa: BLE001 - nothing may escape the child
        code = 1
    finally:
        os._exit(code)


def picklable(error):
    """`error` pickled, or a RuntimeError with its text where it does not
    pickle (or unpickle)."""
    try:
        data = pickle.dumps(error)
        pickle.loads(data)
        return data
    except Exception:  # noqa: BLE001
        return pickle.dumps(RuntimeError(f"{type(error).__name__}: {error}"))


def inference_crash_message(status):
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            name = f"signal {signum}, {signal.Signals(signum).name}"
        except ValueError:
            name = f"signal {signum}"
        return (f"ONNX's shape inference crashed ({name}) on this model (a malformed node "
                f"its C++ inference does not check)")
    return f"ONNX's shape inference ended without a result (exit status {os.WEXITSTATUS(status)})"


def in_function_body(message):
    """Whether ONNX's error arose inside the body of a function operator
    (ONNX's own body failing, e.g. on an attribute default it does not
    resolve): that body is expanded by functions.py and its operators
    typed one by one."""
    return message.count("Inference error(s)") > 1


def all_known_domains(model):
    return all(node.domain in ("", "ai.onnx") for node in model.graph.node)


def types_of(model):
    """name -> TypeProto of every value the model types."""
    return {vi.name: vi.type for vi in list(model.graph.value_info) + list(model.graph.input)
            + list(model.graph.output) if vi.type.HasField("tensor_type")}


def node_label(node, index):
    """How the importer names a node in its messages."""
    return f"node '{node.name or node.op_type + '_' + str(index)}' ({node.op_type})"


def producer_labels(model):
    return {out: node_label(node, k) for k, node in enumerate(model.graph.node)
            for out in node.output if out}


def located_inference_error(model, message):
    """ONNX's inference error, named after the node it reports."""
    text = " ".join(message.split())
    m = re.search(r"\(op_type:(\w+)(?:, node name: ([^)]*))?\)", text)
    where = "ONNX's shape inference"
    if m:
        op, name = m.group(1), (m.group(2) or "").strip()
        for k, node in enumerate(model.graph.node):
            if node.op_type == op and (not name or node.name == name):
                where = node_label(node, k)
                break
    detail = re.sub(r"^\[\w+\] Inference error\(s\): ", "", text)
    return f"{where}: the model's types do not check: {detail}"


def dims_text(shape):
    return "[" + ", ".join(str(d.dim_value) if d.HasField("dim_value") else
                           (d.dim_param or "?") for d in shape.dim) + "]"


def type_text(t):
    tt = t.tensor_type
    elem = ONNX_TYPE_NAMES.get(tt.elem_type, str(tt.elem_type)) if tt.elem_type else "?"
    return elem + (dims_text(tt.shape) if tt.HasField("shape") else "[...]")


def disagreement(declared, computed):
    """Whether TypeProto `declared` contradicts `computed`."""
    d, c = declared.tensor_type, computed.tensor_type
    if d.elem_type and c.elem_type and d.elem_type != c.elem_type:
        return True
    if not (d.HasField("shape") and c.HasField("shape")):
        return False
    if len(d.shape.dim) != len(c.shape.dim):
        return True
    return any(a.HasField("dim_value") and b.HasField("dim_value") and a.dim_value != b.dim_value
               for a, b in zip(d.shape.dim, c.shape.dim))


def declarations(model):
    """(what, ValueInfoProto) of every declared type the model states for
    a value an operator computes: value_info entries and graph outputs."""
    for vi in model.graph.value_info:
        yield "value", vi
    for vi in model.graph.output:
        yield "output", vi


def check_declarations(model, computed):
    producers = producer_labels(model)
    for what, vi in declarations(model):
        have = computed.get(vi.name)
        if have is None or not vi.type.HasField("tensor_type"):
            continue
        if disagreement(vi.type, have):
            where = producers.get(vi.name, f"{what} '{vi.name}'")
            raise RefusedError(f"{where}: {what} '{vi.name}' is declared {type_text(vi.type)}, "
                               f"but the operator computes {type_text(have)}")


def merge_declarations(model, inferred, computed):
    """Fills in, in `inferred`, what inference left unknown and the model
    declares (a whole type, or static dims)."""
    by_name = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for what, vi in declarations(model):
        if not vi.type.HasField("tensor_type"):
            continue
        target = by_name.get(vi.name)
        if target is None:
            inferred.graph.value_info.append(vi)
            continue
        if vi.name not in computed or not target.type.HasField("tensor_type"):
            target.type.CopyFrom(vi.type)
            continue
        d, t = vi.type.tensor_type, target.type.tensor_type
        if not t.elem_type:
            t.elem_type = d.elem_type
        if not d.HasField("shape"):
            continue
        if not t.HasField("shape"):
            t.shape.CopyFrom(d.shape)
            continue
        for a, b in zip(d.shape.dim, t.shape.dim):
            if a.HasField("dim_value") and not b.HasField("dim_value"):
                b.dim_value = a.dim_value
