"""The limits the ONNX importer checks before it reads or allocates
(docs/onnx.md, "Files and limits"): the same file-kind rules as the JSON
reader for the model and its external-data files, the IR's size limits
(docs/ir.md, Limits) for every tensor the model declares, the nesting of
subgraphs and the opset. Each check raises RefusedError; none of them
reads more than the bytes it has checked the size of.
"""
import os
import stat

from ..errors import RefusedError

MAX_FILE_BYTES = 1 << 30      # a model or external-data file: the JSON reader's limit
MAX_ELEMENTS = 1 << 40        # elements of one tensor (docs/ir.md)
MAX_TENSOR_BYTES = 16 << 30   # bytes of one tensor (docs/ir.md)
MAX_STATE_BYTES = 1 << 30     # initialized state the artifact carries (docs/ir.md)
MAX_RANK = 8                  # dims of one tensor (docs/ir.md)
MAX_NESTING = 16              # subgraphs (If, Loop, Scan bodies) inside subgraphs

# Bits of one element of each ONNX element type (onnx.TensorProto.DataType).
ELEMENT_BITS = {1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64,
                12: 32, 13: 64, 14: 64, 15: 128, 16: 16, 17: 8, 18: 8, 19: 8, 20: 8,
                21: 4, 22: 4, 23: 4, 24: 8, 25: 2, 26: 2}
STRING = 8
# The typed field that holds a tensor's values when it has no raw_data, and
# how many field entries one element takes (complex: two; packed 4-bit and
# 2-bit types: a fraction, as int32_data packs them).
TYPED_FIELD = {1: "float_data", 14: "float_data", 11: "double_data", 15: "double_data",
               7: "int64_data", 12: "uint64_data", 13: "uint64_data", 8: "string_data"}
FIELD_PER_ELEMENT = {14: 2, 15: 2}


def read_regular_file(path, what, limit=MAX_FILE_BYTES, offset=0, length=None):
    """The bytes of the regular file `path` (from `offset`, `length` of them
    or all that follow), refusing anything else: a FIFO or a device is
    refused without blocking, a file over `limit` bytes before any is read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise RefusedError(f"cannot open {what}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RefusedError(f"{what} is not a regular file")
        if st.st_size > limit:
            raise RefusedError(f"{what} has {st.st_size} bytes, more than the limit of "
                               f"{limit} bytes")
        if length is None:
            length = st.st_size - offset
        if offset < 0 or length < 0 or offset + length > st.st_size:
            raise RefusedError(f"{what} has {st.st_size} bytes; the data declared at offset "
                               f"{offset} with length {length} is not inside it")
        os.lseek(fd, offset, os.SEEK_SET)
        chunks, left = [], length
        while left:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                raise RefusedError(f"{what} ended before its declared size")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def check_opset(model, supported_max):
    """Refuses an ONNX-domain opset outside 1..supported_max."""
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx") and not 1 <= o.version <= supported_max:
            raise RefusedError(f"opset {o.version} of the ONNX domain is outside the range "
                               f"the importer supports (1 to {supported_max})")


def tensor_elements(t, what):
    """The element count `t` declares, within the IR's limits."""
    count = 1
    for d in t.dims:
        if d < 0:
            raise RefusedError(f"{what} declares a negative dim {d}")
        count *= d
        if count > MAX_ELEMENTS:
            raise RefusedError(f"{what} declares dims {list(t.dims)}: more than the IR's "
                               f"limit of 2^40 elements")
    return count


def tensor_bytes(t, what):
    """The bytes `t` declares (checked against the 16 GiB tensor limit)
    and, unless its data lies in an external file, checked against the
    data it holds: raw_data of exactly that length, or that many values
    in its typed field."""
    count = tensor_elements(t, what)
    bits = ELEMENT_BITS.get(t.data_type)
    if bits is None and t.data_type != STRING:
        raise RefusedError(f"{what} has the unknown ONNX element type {t.data_type}")
    size = (count * bits + 7) // 8 if bits else 0
    if size > MAX_TENSOR_BYTES:
        raise RefusedError(f"{what} declares {size} bytes, more than the IR's limit of 16 GiB "
                           "per tensor")
    if t.data_location == t.EXTERNAL:
        return size
    if t.HasField("raw_data"):
        if len(t.raw_data) != size:
            raise RefusedError(f"{what} declares dims {list(t.dims)} ({size} bytes) but holds "
                               f"{len(t.raw_data)} bytes of data")
        return size
    field = TYPED_FIELD.get(t.data_type, "int32_data")
    per = FIELD_PER_ELEMENT.get(t.data_type, 1)
    if bits is not None and bits < 8:
        expected = (count * bits + 7) // 8  # one packed byte per int32 entry, as ONNX packs them
    else:
        expected = count * per
    held = len(getattr(t, field))
    if held != expected:
        raise RefusedError(f"{what} declares dims {list(t.dims)} ({expected} values) but holds "
                           f"{held} in {field}")
    return size


def external_path(t, base_dir, what):
    """The file an external tensor's `location` names, which must stay in
    the model's folder: no absolute path, no `..`, no symlink out of it."""
    entries = {e.key: e.value for e in t.external_data}
    location = entries.get("location", "")
    if not location:
        raise RefusedError(f"{what} has external data without a location")
    parts = location.replace("\\", "/").split("/")
    if os.path.isabs(location) or location.startswith(("/", "\\")) or ".." in parts or \
            (len(location) > 1 and location[1] == ":"):
        raise RefusedError(f"{what} has external data at '{location}', outside the model's "
                           "folder (a location must be a relative path below it)")
    root = os.path.realpath(base_dir or ".")
    path = os.path.realpath(os.path.join(root, location))
    if os.path.commonpath([root, path]) != root:
        raise RefusedError(f"{what} has external data at '{location}', which leads outside "
                           "the model's folder")
    try:
        offset = int(entries.get("offset", 0))
        length = int(entries["length"]) if "length" in entries else None
    except ValueError:
        raise RefusedError(f"{what} has an external data offset or length that is not a "
                           "number") from None
    return path, offset, length


def tensors_of(model):
    """(tensor, what, subgraph depth) for every tensor the model holds:
    initializers and tensor attributes of every graph, subgraphs and
    function bodies included; refuses subgraphs nested deeper than
    MAX_NESTING. Iterative: no recursion on the model's nesting."""
    stack = [(model.graph, 0)]
    nodes = [(n, 0) for f in model.functions for n in f.node]
    while stack or nodes:
        if stack:
            graph, depth = stack.pop()
            if depth > MAX_NESTING:
                raise RefusedError(f"subgraphs (If, Loop, Scan bodies) are nested more than "
                                   f"{MAX_NESTING} deep")
            for t in graph.initializer:
                yield t, f"initializer '{t.name}'", depth
            nodes.extend((n, depth) for n in graph.node)
            continue
        node, depth = nodes.pop()
        for a in node.attribute:
            label = f"node '{node.name or node.op_type}' ({node.op_type}): attribute '{a.name}'"
            if a.HasField("t"):
                yield a.t, label, depth
            for t in a.tensors:
                yield t, label, depth
            if a.HasField("g"):
                stack.append((a.g, depth + 1))
            stack.extend((g, depth + 1) for g in a.graphs)


def checked_tensors(model):
    """(tensor, what, bytes) for every tensor of `model` (tensors_of),
    each checked against its data and the IR's limits, and the initialized
    state against 1 GiB; no data is read or allocated."""
    checked, state = [], 0
    for t, what, depth in tensors_of(model):
        size = tensor_bytes(t, what)
        if depth == 0:
            state += size
        if state > MAX_STATE_BYTES:
            raise RefusedError(f"the model's initializers and constants hold more than the "
                               f"IR's limit of 1 GiB of initialized state (at {what})")
        checked.append((t, what, size))
    return checked


def check_and_load(model, base_dir):
    """Checks every tensor of `model` against its data and the IR's limits,
    and the initialized state against 1 GiB, before any data is read; then
    reads the external data (checked files in the model's folder) into the
    tensors. Returns the model."""
    for t, what, size in checked_tensors(model):
        if t.data_location != t.EXTERNAL:
            continue
        path, offset, length = external_path(t, base_dir, what)
        if length is not None and length != size:
            raise RefusedError(f"{what} declares dims {list(t.dims)} ({size} bytes) but its "
                               f"external data has length {length}")
        data = read_regular_file(path, f"the external data of {what}", offset=offset,
                                 length=size)
        t.raw_data = data
        del t.external_data[:]
        t.data_location = t.DEFAULT
    return model


def check_constant_size(elements, itemsize, what="the constant"):
    """Refuses a constant the importer would materialize beyond the IR's
    limits (2^40 elements, 1 GiB of initialized state), before NumPy
    allocates it."""
    if elements > MAX_ELEMENTS:
        raise RefusedError(f"{what} would have {elements} elements, more than the IR's limit "
                           "of 2^40")
    if elements * itemsize > MAX_STATE_BYTES:
        raise RefusedError(f"{what} would hold {elements * itemsize} bytes, more than the IR's "
                           "limit of 1 GiB of initialized state")


def _product(dims):
    count = 1
    for d in dims:
        count *= max(int(d), 0)
    return count


def _broadcast(*shapes):
    rank = max((len(s) for s in shapes), default=0)
    dims = [1] * rank
    for s in shapes:
        for k, d in enumerate(s):
            axis = rank - len(s) + k
            dims[axis] = max(dims[axis], int(d)) if d != 0 else 0 if dims[axis] in (0, 1) else dims[axis]
    return dims


def _ints(array):
    return [int(v) for v in array.reshape(-1).tolist()]


def folded_elements(op, arrays, attrs):
    """The element count of what folding operator `op` over the known
    `arrays` gives, computed from the operands' shapes and values without
    evaluating it (exact for the operators that can grow a constant:
    ConstantOfShape, Expand, Tile, Range, Gather, the broadcasting ones);
    None where the operands do not fit the operator (its evaluation
    fails, and the operator's rule says why)."""
    try:
        if op == "ConstantOfShape":
            return _product(_ints(arrays[0]))
        if op == "Expand":
            return _product(_broadcast(arrays[0].shape, _ints(arrays[1])))
        if op == "Tile":
            return _product(d * r for d, r in zip(arrays[0].shape, _ints(arrays[1])))
        if op == "Range":
            start, limit, delta = (float(a.reshape(-1)[0]) for a in arrays[:3])
            return max(int(-(-(limit - start) // delta)), 0) if delta else None
        if op == "Gather":
            data, indices = arrays[0], arrays[1]
            axis = int(attrs.get("axis", 0)) % max(data.ndim, 1)
            rows = data.shape[axis] if data.ndim else 1
            return data.size // max(rows, 1) * indices.size
        if op == "Concat":
            return sum(a.size for a in arrays)
        return _product(_broadcast(*(a.shape for a in arrays)))
    except (ValueError, TypeError, IndexError, OverflowError, ZeroDivisionError):
        return None
