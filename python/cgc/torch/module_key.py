"""The key of a cgc.compile call, taken from the module without exporting
it (what it covers: python/cgc/module_cache.py)."""
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor

import torch
from torch.utils import _pytree

from .. import __version__ as cgc_version
from ..module_cache import Hasher, code_identity, file_identity, plain

# Attributes of nn.Module that are its machinery, not its configuration.
MACHINERY = frozenset({"_parameters", "_buffers", "_modules", "training",
                       "_non_persistent_buffers_set", "_state_dict_hooks",
                       "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                       "_load_state_dict_post_hooks"})


def call_key(module, example_args, example_kwargs, dynamic_shapes, buckets, flags, cgc):
    """The hex key of compiling `module` for this call with the `cgc`
    binary at `cgc`."""
    h = Hasher()
    h.add(cgc_version, torch.__version__, _binary(cgc), tuple(flags),
          plain(buckets), _dims(dynamic_shapes), str(torch.get_default_dtype()))
    h.add(*_package_sources(), *_ambient())
    modules = list(module.named_modules(remove_duplicate=False))
    h.add(*code_identity({type(m) for _, m in modules}))
    for name, m in modules:
        h.add(name, type(m).__module__, type(m).__qualname__, m.training, _hooks(m),
              *sorted((k, plain(v, _tensor)) for k, v in vars(m).items()
                      if k not in MACHINERY))
    _add_state(h, module)
    _add_call(h, example_args, example_kwargs or {})
    return h.hexdigest()


def _tensor(value):
    """A tensor among a submodule's attributes, one that is no parameter
    or buffer (the export takes it as a constant): its bytes too."""
    if not isinstance(value, torch.Tensor):  # a NumPy array
        value = torch.as_tensor(value)
    return ("tensor", _tensor_meta(value), _content_hash(value))


def _ambient():
    """What around the call changes the export: autocast, and the hooks
    every module runs."""
    from torch.nn.modules import module as nn_module
    autocast = tuple((device, torch.is_autocast_enabled(device),
                      str(torch.get_autocast_dtype(device))) for device in ("cuda", "cpu"))
    hooks = tuple((getattr(f, "__module__", ""), getattr(f, "__qualname__", ""))
                  for name in ("_global_forward_hooks", "_global_forward_pre_hooks",
                               "_global_backward_hooks")
                  for f in getattr(nn_module, name, {}).values())
    return [("autocast", autocast), ("global hooks", hooks)]


def _dims(spec):
    """dynamic_shapes with each Dim's name and range (its repr may show
    the name alone)."""
    if isinstance(spec, dict):
        return tuple(sorted((str(k), _dims(v)) for k, v in spec.items()))
    if isinstance(spec, (list, tuple)):
        return (type(spec).__name__, tuple(_dims(v) for v in spec))
    if spec is None or isinstance(spec, (int, str)):
        return spec
    return (type(spec).__name__, getattr(spec, "__name__", None), getattr(spec, "min", None),
            getattr(spec, "max", None), repr(spec))


def _binary(path):
    """The driver binary's identity (a name is looked up on the PATH)."""
    import shutil
    path = shutil.which(path) or path
    try:
        st = os.stat(path)
    except OSError:
        return ("binary", path)
    return ("binary", os.path.realpath(path), st.st_size, st.st_mtime_ns)


_PACKAGE = []


def _package_sources():
    """cgc's own Python files (its lowering rules), hashed once a process."""
    if not _PACKAGE:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for folder, _, names in sorted(os.walk(root)):
            for name in sorted(names):
                if name.endswith(".py"):
                    _PACKAGE.append(file_identity(os.path.join(folder, name)))
    return _PACKAGE


def _hooks(m):
    """The hooks' functions, by name: a hook changes what the export sees."""
    found = []
    for attr in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks"):
        for hook in getattr(m, attr, {}).values():
            found.append((attr, getattr(hook, "__module__", ""),
                          getattr(hook, "__qualname__", type(hook).__qualname__)))
    return tuple(found)


def _tensor_meta(t):
    return (str(t.dtype), tuple(t.shape), tuple(t.stride()), t.device.type,
            t.requires_grad)


def _add_state(h, module):
    """Each parameter and buffer: its metadata, the first name of the
    tensor it shares (tied weights) and a hash of its bytes."""
    named = list(module.named_parameters(remove_duplicate=False)) + \
        list(module.named_buffers(remove_duplicate=False))
    first, distinct = {}, []
    for name, t in named:
        if id(t) not in first:
            first[id(t)] = name
            distinct.append(t)
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        hashes = dict(zip((id(t) for t in distinct), pool.map(_content_hash, distinct)))
    for name, t in named:
        h.add(name, first[id(t)], _tensor_meta(t), hashes[id(t)])


def _content_hash(t):
    """BLAKE2b of the tensor's bytes (hashlib releases the GIL: the pool's
    threads hash in parallel)."""
    with torch.no_grad():
        data = t.detach().contiguous().reshape(-1).view(torch.uint8).cpu().numpy()
    return hashlib.blake2b(memoryview(data), digest_size=16).hexdigest()


def _add_call(h, args, kwargs):
    leaves, spec = _pytree.tree_flatten((tuple(args), dict(kwargs)))
    h.add(str(spec))
    for leaf in leaves:
        h.add(_tensor_meta(leaf) if isinstance(leaf, torch.Tensor) else plain(leaf))
