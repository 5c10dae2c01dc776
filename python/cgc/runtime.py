"""Running cgc artifacts on torch CUDA tensors, without copies, through the
runtime's Python extension (cgc._native, python/native/Runner.cpp, over the
C ABI of runtime/include/cgc/cgc_runtime.h).

    fn = cgc.load("model.cgc")      # one engine and one context
    y = fn(x)                       # x: a contiguous CUDA tensor

A call checks every input (a CUDA tensor of the artifact's dtype, on its
device, contiguous, of its shape or, for a symbolic dim, any extent within
the bounds), binds the caller's pointers to the graph where they changed
since the last call (cgc_context_bind: no copy, for an input of the size
its graph reads, its bucket's; a smaller input is copied into the
context's slot instead), picks
the graph for the dims, and replays it on torch's current stream. Outputs
are views of the context's own buffers, valid until the next call (as
torch.cuda.graph's are: clone what you keep); `fresh_outputs=True` returns
clones of them (one device copy each, on the stream).

The extension's __call__ does every call at dim values an earlier call
ran (binding inputs of their graph's size, copying smaller ones on the
stream) itself; this module's `_slow_call` does the rest and tells the
extension what to repeat at those dims (Runner.remember).
"""
import os

from . import _native
from .driver import compile_file, compiler  # noqa: F401 - cgc.runtime's API since before driver.py
from .dtypes import DTYPES
from .errors import CgcError, SizeOutOfRange

# The torch dtype of each IR dtype (the extension names them as the IR does).
TORCH_DTYPES = {d.ir: d.torch for d in DTYPES}
ROLE_INPUT, ROLE_OUTPUT, ROLE_STATE = 0, 1, 2


def _point_at_cudnn():
    """Tells the runtime where PyTorch's cuDNN is (CGC_CUDNN_LIBRARY, the
    first place it looks), unless the caller did: the runtime dlopens
    libcudnn.so.9 for artifacts with convolutions, and PyTorch's wheels
    keep it in site-packages, where the loader's search may not look."""
    if "CGC_CUDNN_LIBRARY" in os.environ:
        return
    try:
        import nvidia.cudnn
    except ImportError:
        return
    for root in getattr(nvidia.cudnn, "__path__", []):
        lib = os.path.join(root, "lib", "libcudnn.so.9")
        if os.path.exists(lib):
            os.environ["CGC_CUDNN_LIBRARY"] = lib
            return


class Artifact(_native.Runner):
    """A loaded artifact with one context: call it on torch CUDA tensors."""

    def __init__(self, path, device=None, ranks=None):
        """`ranks`: for a data-parallel artifact, (NCCL unique id from rank 0,
        rank, world size, watchdog timeout in ms): the engine joins them
        (cgc_engine_join) before its context is made."""
        import torch
        self.torch = torch
        torch.cuda.init()
        _point_at_cudnn()
        index = device if device is not None else torch.cuda.current_device()
        self.device = torch.device("cuda", index)
        super().__init__(os.fspath(path), index, ranks)
        # What views of the context's buffers keep alive (not this object:
        # it holds views, and torch's storage hides references from the GC).
        self._owner = _Owner(self._loaded, torch, self.device)
        self.dims = self._dims()  # (name, min, max) of each dim
        self.inputs = [t for t in self._specs(ROLE_INPUT) if t["kind"] == "user_input"]
        self.outputs = self._specs(ROLE_OUTPUT)
        self.states = {t["name"]: t for t in self._specs(ROLE_STATE)}
        self.buffers, self.output_ranges = {}, []
        self.last_dims, self.graph = None, 0
        raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self._stream = raw_stream or (lambda i: torch.cuda.current_stream(i).cuda_stream)
        self._configure([(t["name"], t["dtype"], t["shape"], t["dims"],
                          torch.empty(0, dtype=t["dtype"]).element_size()) for t in self.inputs],
                        torch.Tensor, self._stream)

    def _specs(self, role):
        """The manifest's tensors of `role`, their dtypes as torch's."""
        out = self._tensors(role)
        for t in out:
            t["dtype"] = getattr(self.torch, TORCH_DTYPES[t["dtype"]])
        return out

    def _dims_of(self, args):
        values = [hi for _, _, hi in self.dims]
        seen = [False] * len(self.dims)
        for spec, x in zip(self.inputs, args):
            name = spec["name"]
            if not isinstance(x, self.torch.Tensor):
                raise TypeError(f"input '{name}': expected a torch.Tensor, got {type(x).__name__}")
            if x.device != self.device:
                raise TypeError(f"input '{name}' is on {x.device}; the artifact runs on {self.device}")
            if x.dtype != spec["dtype"]:
                raise TypeError(f"input '{name}' has dtype {x.dtype}, expected {spec['dtype']}")
            if not x.is_contiguous():
                raise ValueError(f"input '{name}' is not contiguous (call .contiguous())")
            if x.dim() != len(spec["shape"]):
                raise ValueError(f"input '{name}' has shape {list(x.shape)}, expected rank "
                                 f"{len(spec['shape'])} ({spec['shape']})")
            for a, (n, d) in enumerate(zip(x.shape, spec["dims"])):
                if d < 0 and n != spec["shape"][a]:
                    raise ValueError(f"input '{name}' has shape {list(x.shape)}, expected "
                                     f"{spec['shape']}")
                if d >= 0:
                    dname, lo, hi = self.dims[d]
                    if not lo <= n <= hi:
                        raise SizeOutOfRange(f"input '{name}': dim {dname} = {n} is outside "
                                         f"[{lo}, {hi}]")
                    if seen[d] and values[d] != n:
                        raise ValueError(f"input '{name}': dim {dname} = {n}, but {values[d]} "
                                         "in an earlier input")
                    values[d], seen[d] = n, True
        return values

    def _slow_call(self, *args, fresh_outputs=False):
        """A call the extension's fast path did not take: checks (raising
        on a wrong input), picks the graph, binds or copies, replays, and
        tells the extension what to repeat at these dims."""
        values = self._checked(args, fresh_outputs)
        if tuple(values) != self.last_dims:  # A new size: its graph.
            self.graph, self.last_dims = self._select_graph(values), tuple(values)
        results = self._launch(self.graph, values, args)
        self._remember(self.graph, values, results, self.output_ranges)
        return self._returned(results, fresh_outputs)

    def run(self, graph, *args, fresh_outputs=False):
        """Runs the graph named `graph` (an entry of the model, or "main")
        on `args`, as a call runs the model's: same inputs, same outputs,
        the same per-context state."""
        values = self._checked(args, fresh_outputs)
        return self._returned(self._launch(self._find_graph(graph), values, args),
                              fresh_outputs)

    def reset_state(self):
        """Every per-context state tensor (scope "context") back to its
        initial value, in order on torch's current stream."""
        self._reset_state(self._stream(self.device.index))

    def _checked(self, args, fresh_outputs):
        """The dim values of a call on `args` (raising on a wrong input)."""
        if len(args) != len(self.inputs):
            raise TypeError(f"expected {len(self.inputs)} inputs "
                            f"({', '.join(t['name'] for t in self.inputs)}), got {len(args)}")
        if not isinstance(fresh_outputs, bool):
            raise TypeError(f"fresh_outputs must be True or False, got {fresh_outputs!r}")
        return self._dims_of(args)

    def _launch(self, graph, values, args):
        """Binds or copies `args`, replays `graph` and returns the outputs
        (views of the context's buffers)."""
        extents = self._graph_extents(graph)  # the size of each dim it reads
        for spec, x in zip(self.inputs, args):
            read = [n if d < 0 else extents[d] for n, d in zip(spec["shape"], spec["dims"])]
            if list(x.shape) == read and not self._in_outputs(x) and \
                    x.data_ptr() % self._bind_alignment == 0:
                self._bind(spec["name"], x.data_ptr())
            else:  # Smaller than the bucket the graph reads, misaligned or an
                # earlier output: copied into the context's slot.
                self._bind(spec["name"], 0)
                self._buffer(spec, "input")[:x.numel()].copy_(x.view(-1))
        results = [self._real(self._buffer(spec, "output"), spec, values)
                   for spec in self.outputs]
        self._run(graph, values, self._stream(self.device.index))
        return results[0] if len(results) == 1 else tuple(results)

    def _returned(self, results, fresh_outputs):
        if fresh_outputs:  # Copies the next call cannot overwrite.
            return results.clone() if len(self.outputs) == 1 else \
                tuple(r.clone() for r in results)
        return results

    def _in_outputs(self, x):
        """Whether `x` lies in one of the context's output buffers (an
        earlier result fed back): bound, the graph would read its input
        where it writes its output, so it is copied instead."""
        p = x.data_ptr()
        return any(lo <= p < hi for lo, hi in self.output_ranges)

    @staticmethod
    def _real(flat, spec, values):
        """The real part of an output's flat buffer (packed at its front)."""
        real = [values[d] if d >= 0 else n for n, d in zip(spec["shape"], spec["dims"])]
        return flat[:_count(real)].view(real)

    def _buffer(self, spec, role):
        """The context's own buffer of `spec`, flat (made once)."""
        key = (role, spec["name"])
        if key not in self.buffers:
            self.buffers[key] = self._context_view(spec, role)
        return self.buffers[key]

    def state(self, name):
        """A CPU torch tensor copy of persistent state `name` (a parameter,
        buffer or optimizer or RNG state; per-context state: this
        context's), after the work on the stream."""
        spec = self._state_spec(name)
        torch = self.torch
        torch.cuda.current_stream(self.device).synchronize()
        out = torch.empty(spec["shape"], dtype=spec["dtype"])
        self._state_read(name, out.data_ptr(), spec["bytes"])
        return out

    def set_state(self, name, value):
        """Writes `value` (a tensor of the state's dtype and shape) into
        persistent state `name` for the calls that follow."""
        spec = self._state_spec(name)
        value = value.detach().to("cpu").contiguous()
        if value.dtype != spec["dtype"] or list(value.shape) != spec["shape"]:
            raise ValueError(f"state '{name}' is {spec['dtype']}{spec['shape']}, got "
                             f"{value.dtype}{list(value.shape)}")
        self.torch.cuda.current_stream(self.device).synchronize()
        self._state_write(name, value.data_ptr(), spec["bytes"])

    def _state_spec(self, name):
        if name not in self.states:
            raise KeyError(f"no state named '{name}' (the artifact has "
                           f"{', '.join(sorted(self.states)) or 'none'})")
        return self.states[name]

    def _context_view(self, spec, role):
        """The context's own buffer of input or output `spec`, flat, as a
        torch tensor."""
        ptr = self._context_buffer(spec["name"], role == "output")
        if role == "output":
            self.output_ranges.append((ptr, ptr + spec["bytes"]))
        return self._device_view(ptr, spec)

    def state_view(self, name):
        """Persistent state `name` as a torch tensor on the device, of its
        shape: reads and writes on torch's stream are ordered with the runs
        (no synchronization, unlike state() and set_state())."""
        spec = self._state_spec(name)
        return self._device_view(self._state_data(name), spec).view(spec["shape"])

    def _device_view(self, ptr, spec):
        """The device memory at `ptr` holding `spec`'s elements, flat, as a
        torch tensor that keeps the engine and context alive."""
        torch = self.torch
        typestr = ("<i2" if spec["dtype"] == torch.bfloat16
                   else torch.empty(0, dtype=spec["dtype"]).numpy().dtype.str)
        holder = type("Buffer", (), {"__cuda_array_interface__": {
            "shape": (_count(spec["shape"]),), "typestr": typestr, "data": (ptr, False),
            "version": 2}})()
        holder.owner = self._owner  # The memory lives as long as a view of it.
        flat = torch.as_tensor(holder, device=self.device)  # (its storage holds `holder`)
        return flat.view(spec["dtype"]) if spec["dtype"] == torch.bfloat16 else flat



class _Owner:
    """Holds a loaded artifact's engine and context (cgc._native.Loaded) for
    the callable and every view of the context's buffers; when the last of
    them goes, waits for the device (launches on torch's streams may still
    use the context) before letting them go."""

    def __init__(self, loaded, torch, device):
        self.loaded, self.torch, self.device = loaded, torch, device

    def __del__(self):
        try:
            self.torch.cuda.synchronize(self.device)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _count(shape):
    count = 1
    for n in shape:
        count *= n
    return count


def load(path, device=None):
    """A callable running the artifact at `path` on torch CUDA tensors."""
    return Artifact(path, device)


def compile(module, example_args, path=None, dynamic_shapes=None, cgc=None, flags=(),  # noqa: A001
            *, buckets=None, example_kwargs=None):
    """Exports `module` (cgc.export), compiles it with the `cgc` driver and
    loads the artifact: a CompiledModule, called as the module is. A call
    without `path` whose module, state and arguments a cached call had
    loads that call's artifact without exporting (module_cache.py)."""
    import time
    from .driver import LOG, compiler
    start = time.perf_counter()
    entry = _cache_entry(module, example_args, example_kwargs, dynamic_shapes, buckets,
                         flags, cgc or compiler()) if path is None else None
    keyed = time.perf_counter()
    if entry:
        signature = entry.lookup()
        if signature is not None:
            try:
                compiled = CompiledModule(load(entry.artifact), signature)
            except CgcError as e:  # corrupt or truncated: compiled again
                LOG.warning("cgc.compile: removed a cache entry that does not load (%s)", e)
                entry.remove()
            else:
                LOG.info("cgc.compile of %s: %.2f s: cached: key %.2f s, load %.2f s",
                         type(module).__name__, time.perf_counter() - start, keyed - start,
                         time.perf_counter() - keyed)
                return compiled
    return _compile_cold(module, example_args, path, dynamic_shapes, cgc, flags, buckets,
                         example_kwargs, entry, start)


def _cache_entry(module, example_args, example_kwargs, dynamic_shapes, buckets, flags, cgc):
    """The cache entry of this call, or None: the cache off (CGC_CACHE=0,
    --no-cache, a folder others can write), or a module the key cannot
    stand for (said at INFO; any other failure of the key at DEBUG)."""
    from . import module_cache
    from .driver import LOG
    if "--no-cache" in flags:
        return None
    try:
        where = module_cache.folder()
        if where is None:
            return None
        from .torch.module_key import call_key
        key = call_key(module, example_args, example_kwargs, dynamic_shapes, buckets,
                       flags, cgc)
    except module_cache.Unkeyable as e:
        LOG.info("cgc.compile: not cached: %s", e)
        return None
    except Exception as e:  # noqa: BLE001 - the cache is an optimization
        LOG.debug("cgc.compile: no cache key (%s: %s)", type(e).__name__, e)
        return None
    return module_cache.Entry(where, "module-" + key)


def _compile_cold(module, example_args, path, dynamic_shapes, cgc, flags, buckets,
                  example_kwargs, entry, start):
    import shutil
    import tempfile
    import time
    from .driver import LOG, compiler
    from .torch.export import export_program
    work = tempfile.mkdtemp(prefix="cgc-compile-")
    times = [start, time.perf_counter()]
    try:
        ir_path = os.path.join(work, "model.json")
        _, signature = export_program(module, example_args, ir_path, dynamic_shapes,
                                      example_kwargs, buckets=buckets)
        times.append(time.perf_counter())
        try:
            art = compile_beside(ir_path, path, os.path.join(work, "model.cgc"), flags, cgc)
        except CgcError as e:  # Located at the module's export, not at a deleted file.
            raise CgcError(str(e).replace(ir_path, f"{type(module).__name__} (exported)")) \
                from None
        times.append(time.perf_counter())
        compiled = CompiledModule(load(art), signature)  # (the engine holds the bytes)
        times.append(time.perf_counter())
        if entry and weights_stay_beside(art):
            # The cache keeps an artifact alone (the driver's does not keep
            # these either): its entry could not find the weights.
            LOG.info("cgc.compile: not cached: the weights stay beside the artifact")
            entry = None
        if entry:
            try:
                if entry.store(art, signature):
                    entry.trim(cgc or compiler())
                else:
                    LOG.debug("cgc.compile: the call's signature does not pickle: not cached")
            except OSError as e:  # a full or read-only cache folder: compiled all the same
                LOG.warning("cgc.compile: not cached (%s)", e)
        LOG.info("cgc.compile of %s: %.2f s: key %.2f s, export %.2f s, cgc %.2f s, "
                 "load %.2f s", type(module).__name__, times[4] - times[0],
                 times[1] - times[0], times[2] - times[1], times[3] - times[2],
                 times[4] - times[3])
        return compiled
    finally:
        shutil.rmtree(work, ignore_errors=True)


ARTIFACT_STATE_LIMIT = 1 << 30  # bytes of state an artifact carries (docs/artifact.md)
# The driver keeps the weights beside when they and the state the artifact
# must carry (constants, seeded initializers) pass the limit; that state is
# not known here, so weights within this margin of the limit move too.
BESIDE_MARGIN = 1 << 27


def weights_stay_beside(artifact):
    """Whether the artifact's manifest names a weights file beside it
    (docs/artifact.md: the header's manifest size at byte 8, the manifest's
    JSON from byte 32)."""
    import json
    import struct
    with open(artifact, "rb") as f:
        header = f.read(32)
        if len(header) < 32 or header[:4] != b"CGCA":
            return False
        (size,) = struct.unpack_from("<Q", header, 8)
        return "weights_file" in json.loads(f.read(size))


def compile_beside(ir_path, path, scratch, flags, cgc):
    """compile_file of the IR into `path`, or `scratch` (beside the IR's
    weights, in its work folder) without one. Weights past what an
    artifact carries stay beside it: with `path` they are moved to
    `<path>.safetensors` first (_weights_beside) and removed again should
    the compile fail or be interrupted (the next compile would find them)."""
    moved = _weights_beside(ir_path, path) if path else None
    try:
        return compile_file(ir_path, path or scratch,
                            (*flags, "--weights-beside") if moved else flags, cgc)
    except BaseException:
        if moved:
            os.remove(moved)
        raise


def _weights_beside(ir_path, artifact):
    """Weights past what an artifact carries stay in their safetensors
    file beside the artifact (docs/artifact.md): moves the export's weights
    file to `<artifact>.safetensors` and points the IR at it. Returns the
    new path, or None when the weights go into the artifact."""
    import json
    with open(ir_path) as f:
        ir = json.load(f)
    if "weights_file" not in ir:
        return None
    weights = os.path.join(os.path.dirname(ir_path), ir["weights_file"])
    if os.path.getsize(weights) <= ARTIFACT_STATE_LIMIT - BESIDE_MARGIN:
        return None
    beside = os.path.splitext(os.fspath(artifact))[0] + ".safetensors"
    if os.path.exists(beside):
        raise CgcError(f"the weights ({os.path.getsize(weights)} bytes) stay beside the "
                       f"artifact, in {beside}, which exists already")
    import shutil
    shutil.move(weights, beside)
    ir["weights_file"] = os.path.relpath(os.path.abspath(beside), os.path.dirname(ir_path))
    with open(ir_path, "w") as f:
        json.dump(ir, f, indent=1)
    return beside


class CompiledModule:
    """A compiled module, called with the arguments the module takes
    (positional and keyword, tensors as CUDA tensors; the non-tensor ones
    as they were at export) and returning what the module returns (a
    tensor, tuple, dict or ModelOutput: torch.export's output structure).
    `artifact` is the loaded Artifact, called with the graph's inputs alone
    (the fastest path)."""

    def __init__(self, artifact, signature):
        self.artifact, self.signature = artifact, signature

    def __call__(self, *args, fresh_outputs=False, **kwargs):
        inputs = self.signature.inputs(args, kwargs)
        return self.signature.outputs(self.artifact(*inputs, fresh_outputs=fresh_outputs))

    def __getattr__(self, name):  # The artifact's own: inputs, states, state() ...
        if name in ("artifact", "signature"):  # (not set yet: copy, pickle)
            raise AttributeError(name)
        return getattr(self.artifact, name)
