"""cgc from Python: PyTorch modules and ONNX models into cgc's JSON IR
(docs/python.md, docs/onnx.md).

    import cgc
    cgc.export(module.eval(), (x,), "model.json")    # torch.export, + model.safetensors
    ir, weights = cgc.from_onnx("model.onnx")        # the JSON IR and its weights
    cgc.write_ir(ir, weights, "model.json")           # then: cgc model.json -o model.cgc
    cgc.__version__                                   # cgc's version, as `cgc --version`
    torch.compile(module, backend="cgc")              # parts cgc cannot express stay in PyTorch

The front ends are the subpackages cgc.onnx (the ONNX importer) and
cgc.torch (torch.export programs; torch is imported only when a module is
exported); cgc.dtypes is their one dtype table, cgc.errors their
exceptions, cgc.runtime the callable on torch tensors.
"""
from .errors import RefusedError, SizeOutOfRange  # noqa: F401
from .onnx.importer import onnx_to_ir, write_ir  # noqa: F401

# What `from cgc import *` takes: the API, never the subpackages cgc.onnx
# and cgc.torch, which would hide the caller's onnx and torch. (CgcError,
# which needs the extension, is imported by name.)
__all__ = ["RefusedError", "SizeOutOfRange", "onnx_to_ir", "write_ir", "from_onnx", "export", "load",
           "compile_file", "compile", "compile_train", "compile_generate", "explain"]


def __getattr__(name):
    """cgc.CgcError (cgc.errors): loaded from the runtime's extension when
    first named, so that `import cgc` needs no extension."""
    if name == "CgcError":
        from .errors import CgcError
        return CgcError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _read_version():
    """project()'s version in the top-level CMakeLists.txt, cgc's one
    version string: from cgc/_version.py where the build wrote it
    (build/python/cgc, the wheel, an installed package), else from the
    source checkout's CMakeLists.txt (PYTHONPATH=python)."""
    try:
        from ._version import __version__ as version
        return version
    except ImportError:
        pass
    import os
    import re
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        with open(os.path.join(here, os.pardir, os.pardir, "CMakeLists.txt")) as f:
            return re.search(r"^project\(cgc VERSION ([0-9][0-9.]*)", f.read(), re.M).group(1)
    except (OSError, AttributeError):
        return "0+unknown"


__version__ = _read_version()


def from_onnx(path_or_model, **options):
    """(ir, weights) of an ONNX model (a path, str or path-like, whatever
    its extension's case, or a ModelProto)."""
    import os
    import onnx
    model = path_or_model
    if isinstance(model, (str, os.PathLike)):
        model = onnx.load(os.fspath(model))
    return onnx_to_ir(model, **options)


def export(module, example_args, path, dynamic_shapes=None, example_kwargs=None, *, buckets=None):
    """Exports a torch module with torch.export into the IR at `path`;
    `buckets` ({dim name: [extents]}) compiles a dynamic dim per bucket."""
    from .torch.export import export as torch_export
    return torch_export(module, example_args, path, dynamic_shapes, example_kwargs,
                        buckets=buckets)


def load(path, device=None):
    """A callable running the artifact at `path` on torch CUDA tensors."""
    from .runtime import load as runtime_load
    return runtime_load(path, device)


def compile_file(source, output, flags=(), cgc=None):
    """The `cgc` driver on an IR or ONNX file: writes the artifact `output`."""
    from .driver import compile_file as driver_compile_file
    return driver_compile_file(source, output, flags, cgc)


def compile_train(module, loss_fn, optimizer, example_batch, **options):
    """A training step: `loss = step(*batch)` runs the loss of the module's
    outputs, backward and the torch.optim optimizer's update as one graph
    replay (docs/training.md)."""
    from .train import compile_train as train_compile
    return train_compile(module, loss_fn, optimizer, example_batch, **options)


def compile_generate(model, max_new_tokens, max_prompt, batch, **options):
    """A transformers decoder's generation loop as one graph launch:
    `tokens, lengths = gen(input_ids, attention_mask)` (docs/generation.md)."""
    from .generate import compile_generate as generate_compile
    return generate_compile(model, max_new_tokens, max_prompt, batch, **options)


def compile(module, example_args, path=None, dynamic_shapes=None, cgc=None, flags=(),  # noqa: A001
            *, buckets=None, example_kwargs=None):
    """cgc.export + the `cgc` tool + cgc.load: a callable taking the
    module's arguments and returning what the module returns."""
    from .runtime import compile as runtime_compile
    return runtime_compile(module, example_args, path, dynamic_shapes, cgc, flags,
                           buckets=buckets, example_kwargs=example_kwargs)


def explain(model, *args, **kwargs):
    """What `torch.compile(model, backend="cgc")` runs in cgc and what it
    leaves to PyTorch (each op with its reason and source line), for a
    call with these arguments: the graphs are split and lowered, nothing
    is compiled, and the call runs in PyTorch (docs/python.md)."""
    from .torch.backend import explain as backend_explain
    return backend_explain(model, args, kwargs)
