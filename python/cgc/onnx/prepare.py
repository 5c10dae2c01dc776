"""The forms exporters write that the importer reads as plain graphs:
sparse initializers (made dense) and model-local functions (inlined:
what torch.onnx.export's dynamo path emits). Run before shape inference.
"""
import numpy as np

from ..errors import RefusedError


def prepared(model):
    """`model` with its sparse initializers dense and its local functions
    inlined (a copy where anything changed; `model` itself otherwise)."""
    import onnx
    if model.graph.sparse_initializer:
        model = with_dense_initializers(onnx, model)
    if model.functions:
        model = inlined(onnx, model)
    return model


def dense_array(onnx, sparse, what):
    """The dense NumPy array of SparseTensorProto `sparse`: its values at
    its indices (linear [NNZ] or coordinates [NNZ, rank]), zeros elsewhere."""
    from onnx import numpy_helper
    dims = [int(d) for d in sparse.dims]
    values = numpy_helper.to_array(sparse.values).reshape(-1)
    indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
    size = int(np.prod(dims)) if dims else 1
    if indices.ndim == 2 and dims:
        if indices.shape != (values.size, len(dims)):
            raise RefusedError(f"{what}: its indices have shape {list(indices.shape)}, "
                               f"not [{values.size}, {len(dims)}]")
        bad = (indices < 0) | (indices >= np.array(dims))
        if bad.any():
            raise RefusedError(f"{what}: index {indices[bad.any(axis=1)][0].tolist()} lies "
                               f"outside its dims {dims}")
        linear = np.ravel_multi_index(tuple(indices.T), dims) if values.size else indices[:, 0]
    elif indices.ndim == 1 and indices.size == values.size:
        linear = indices
        if linear.size and (linear.min() < 0 or linear.max() >= size):
            raise RefusedError(f"{what}: linear index {int(linear[(linear < 0) | (linear >= size)][0])} "
                               f"lies outside its {size} elements")
    else:
        raise RefusedError(f"{what}: its indices have shape {list(indices.shape)} for "
                           f"{values.size} values")
    dense = np.zeros(size, values.dtype)
    dense[linear] = values
    return dense.reshape(dims)


def with_dense_initializers(onnx, model):
    from onnx import numpy_helper
    model = copy_of(onnx, model)
    for sparse in model.graph.sparse_initializer:
        name = sparse.values.name
        array = dense_array(onnx, sparse, f"sparse initializer '{name}'")
        model.graph.initializer.append(numpy_helper.from_array(array, name))
    del model.graph.sparse_initializer[:]
    return model


def inlined(onnx, model):
    """`model` with every call of a model-local function replaced by the
    function's body (nested calls too, attribute references resolved,
    internal names made unique): onnx.inliner does it."""
    import onnx.inliner
    try:
        return onnx.inliner.inline_local_functions(model)
    except Exception as e:  # noqa: BLE001 - a malformed function: said as such
        raise RefusedError(f"its model-local functions cannot be inlined: {e}") from None


def copy_of(onnx, model):
    return onnx.ModelProto.FromString(model.SerializeToString())
