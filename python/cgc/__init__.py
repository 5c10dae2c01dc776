"""cgc from Python: the ONNX way in (docs/onnx.md).

    import cgc
    ir, weights = cgc.from_onnx("model.onnx")        # the JSON IR and its weights
    cgc.write_ir(ir, weights, "model.json")           # then: cgc model.json -o model.cgc
"""
from .onnx_import import onnx_to_ir, write_ir  # noqa: F401
from .onnx_types import RefusedError  # noqa: F401


def from_onnx(path_or_model, **options):
    """(ir, weights) of an ONNX model (a path or a ModelProto)."""
    import onnx
    model = onnx.load(path_or_model) if isinstance(path_or_model, str) else path_or_model
    return onnx_to_ir(model, **options)
