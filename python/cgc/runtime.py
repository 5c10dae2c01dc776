"""Running cgc artifacts on torch CUDA tensors, without copies: the C ABI of
the runtime (runtime/include/cgc/cgc_runtime.h) through ctypes, from
libcgc_runtime.so ($CGC_RUNTIME_LIB, else beside this package, else the
source tree's build/runtime).

    fn = cgc.load("model.cgc")      # one engine and one context
    y = fn(x)                       # x: a contiguous CUDA tensor

A call checks every input (a CUDA tensor of the artifact's dtype, on its
device, contiguous, of its shape or, for a symbolic dim, any extent within
the bounds), binds the caller's pointers to the graph where they changed
since the last call (cgc_context_bind: no copy; an input smaller than the
bucket its graph reads is copied into the context's slot instead), picks
the graph for the dims, and replays it on torch's current stream. Outputs
are views of the context's own buffers, valid until the next call (as
torch.cuda.graph's are: clone what you keep); `fresh_outputs=True` makes
new tensors and binds them instead (each new pointer updates the graph's
nodes, which costs more per call).
"""
import ctypes
import os

CGC_DTYPES = {0: "float32", 1: "float16", 2: "bfloat16", 3: "int32", 4: "int64", 5: "bool"}
ROLE_INPUT, ROLE_OUTPUT, ROLE_STATE = 0, 1, 2


class _TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_char_p), ("dtype", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("bytes", ctypes.c_size_t)]


def _library():
    candidates = [os.environ.get("CGC_RUNTIME_LIB")]
    here = os.path.dirname(os.path.abspath(__file__))
    candidates += [os.path.join(here, "libcgc_runtime.so"),
                   os.path.join(here, "..", "..", "build", "runtime", "libcgc_runtime.so")]
    for path in candidates:
        if path and os.path.exists(path):
            return _declare(ctypes.CDLL(path))
    raise OSError("cannot find libcgc_runtime.so: set CGC_RUNTIME_LIB")


def _declare(lib):
    p, i64, sz = ctypes.c_void_p, ctypes.c_int64, ctypes.c_size_t
    lib.cgc_last_error.restype = ctypes.c_char_p
    lib.cgc_engine_load_file.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(p)]
    lib.cgc_engine_destroy.argtypes = [p]
    lib.cgc_context_create.argtypes = [p, p, sz, ctypes.POINTER(p)]
    lib.cgc_context_destroy.argtypes = [p]
    lib.cgc_engine_num_tensors.argtypes = [p, ctypes.c_int]
    lib.cgc_engine_num_tensors.restype = sz
    lib.cgc_engine_tensor_info.argtypes = [p, ctypes.c_int, sz, ctypes.POINTER(_TensorInfo)]
    lib.cgc_engine_tensor_dim.argtypes = [p, ctypes.c_int, sz, sz, ctypes.POINTER(i64)]
    lib.cgc_engine_num_dims.argtypes = [p]
    lib.cgc_engine_num_dims.restype = sz
    lib.cgc_engine_dim_info.argtypes = [p, sz, ctypes.POINTER(ctypes.c_char_p),
                                        ctypes.POINTER(i64), ctypes.POINTER(i64)]
    lib.cgc_engine_select_graph.argtypes = [p, ctypes.POINTER(i64), sz, ctypes.POINTER(sz)]
    lib.cgc_context_bind.argtypes = [p, ctypes.c_char_p, p]
    lib.cgc_context_output.argtypes = [p, ctypes.c_char_p, p]
    lib.cgc_context_input.argtypes = [p, ctypes.c_char_p, p]
    lib.cgc_run.argtypes = [p, sz, ctypes.POINTER(i64), sz, p]
    lib.cgc_engine_state_read.argtypes = [p, ctypes.c_char_p, p, sz]
    lib.cgc_engine_state_write.argtypes = [p, ctypes.c_char_p, p, sz]
    return lib


class CgcError(RuntimeError):
    """A call of the runtime failed; the message is the runtime's."""


class Artifact:
    """A loaded artifact with one context: call it on torch CUDA tensors."""

    def __init__(self, path, device=None):
        import torch
        self.torch = torch
        self.lib = _library()
        self.device = torch.device("cuda", device if device is not None else torch.cuda.current_device())
        torch.cuda.init()
        self.engine, self.ctx = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self.lib.cgc_engine_load_file(os.fsencode(path), self.device.index,
                                                  ctypes.byref(self.engine)), f"load {path}")
        self._check(self.lib.cgc_context_create(self.engine, None, 0, ctypes.byref(self.ctx)),
                    "create a context")
        self.dims = []
        for d in range(self.lib.cgc_engine_num_dims(self.engine)):
            name, lo, hi = ctypes.c_char_p(), ctypes.c_int64(), ctypes.c_int64()
            self.lib.cgc_engine_dim_info(self.engine, d, ctypes.byref(name), ctypes.byref(lo),
                                         ctypes.byref(hi))
            self.dims.append((name.value.decode(), lo.value, hi.value))
        self.inputs = [t for t in self._tensors(ROLE_INPUT) if t["kind"] == "user_input"]
        self.outputs = self._tensors(ROLE_OUTPUT)
        self.states = {t["name"]: t for t in self._tensors(ROLE_STATE)}
        self.bound, self.buffers, self.output_ranges = {}, {}, []
        self.last_dims, self.graph, self.views = None, 0, None
        self.last_args, self.last_ptrs, self.results = None, None, None
        self.dim_values = (ctypes.c_int64 * max(len(self.dims), 1))()

    def _check(self, status, what):
        if status != 0:
            raise CgcError(f"cgc: cannot {what}: {self.lib.cgc_last_error().decode()}")

    def _tensors(self, role):
        out = []
        for k in range(self.lib.cgc_engine_num_tensors(self.engine, role)):
            info = _TensorInfo()
            self._check(self.lib.cgc_engine_tensor_info(self.engine, role, k, ctypes.byref(info)),
                        "read the manifest")
            axes = []
            for a in range(info.ndim):
                dim = ctypes.c_int64()
                self.lib.cgc_engine_tensor_dim(self.engine, role, k, a, ctypes.byref(dim))
                axes.append(dim.value)
            out.append({"name": info.name.decode(), "kind": info.kind.decode(),
                        "dtype": getattr(self.torch, CGC_DTYPES[info.dtype]),
                        "shape": [info.shape[a] for a in range(info.ndim)], "dims": axes,
                        "bytes": info.bytes})
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
                        raise ValueError(f"input '{name}': dim {dname} = {n} is outside "
                                         f"[{lo}, {hi}]")
                    if seen[d] and values[d] != n:
                        raise ValueError(f"input '{name}': dim {dname} = {n}, but {values[d]} "
                                         "in an earlier input")
                    values[d], seen[d] = n, True
        return values

    def _bind(self, name, ptr):
        if self.bound.get(name) != ptr:
            self._check(self.lib.cgc_context_bind(self.ctx, name.encode(), ctypes.c_void_p(ptr)),
                        f"bind '{name}'")
            self.bound[name] = ptr

    def __call__(self, *args, fresh_outputs=False):
        torch = self.torch
        if not fresh_outputs and self._same_call(args):  # Checked, bound and viewed before.
            self._check(self.lib.cgc_run(self.ctx, self.graph, self.dim_values, len(self.dims),
                                         torch.cuda.current_stream(self.device).cuda_stream),
                        "run")
            return self.results
        self.last_args, self.last_ptrs = None, None
        if len(args) != len(self.inputs):
            raise TypeError(f"expected {len(self.inputs)} inputs "
                            f"({', '.join(t['name'] for t in self.inputs)}), got {len(args)}")
        values = self._dims_of(args)
        key = tuple(values)
        if key != self.last_dims:  # A new size: its graph and its output views.
            for d, v in enumerate(values):
                self.dim_values[d] = v
            graph = ctypes.c_size_t()
            self._check(self.lib.cgc_engine_select_graph(self.engine, self.dim_values,
                                                         len(values), ctypes.byref(graph)),
                        "pick a graph")
            self.graph, self.last_dims, self.views = graph.value, key, None
        for spec, x in zip(self.inputs, args):
            if list(x.shape) == spec["shape"] and not self._in_outputs(x):
                self._bind(spec["name"], x.data_ptr())
            else:  # Smaller than the bucket the graph reads: into the context's slot.
                self._bind(spec["name"], None)
                self._buffer(spec, "input")[:x.numel()].copy_(x.view(-1))
        if fresh_outputs:
            results = []
            for spec in self.outputs:
                buf = torch.empty(spec["shape"], dtype=spec["dtype"], device=self.device)
                self._bind(spec["name"], buf.data_ptr())
                results.append(self._real(buf.view(-1), spec, values))
        else:
            if self.views is None:
                for spec in self.outputs:
                    self._bind(spec["name"], None)
                self.views = [self._real(self._buffer(spec, "output"), spec, values)
                              for spec in self.outputs]
            for spec in self.outputs:
                self._bind(spec["name"], None)
            results = self.views
        stream = torch.cuda.current_stream(self.device).cuda_stream
        self._check(self.lib.cgc_run(self.ctx, self.graph, self.dim_values, len(values),
                                     ctypes.c_void_p(stream)), "run")
        results = results[0] if len(results) == 1 else tuple(results)
        if not fresh_outputs and all(list(x.shape) == spec["shape"] and not self._in_outputs(x)
                                     for spec, x in zip(self.inputs, args)):
            self.last_args, self.results = args, results
            self.last_ptrs = [x.data_ptr() for x in args]
        return results

    def _in_outputs(self, x):
        """Whether `x` lies in one of the context's output buffers (an
        earlier result fed back): bound, the graph would read its input
        where it writes its output, so it is copied instead."""
        p = x.data_ptr()
        return any(lo <= p < hi for lo, hi in self.output_ranges)

    def _same_call(self, args):
        """Whether `args` are the very tensors of the last call, at the same
        addresses (their checks, bindings and output views still hold)."""
        last = self.last_args
        return (last is not None and len(args) == len(last)
                and all(a is b for a, b in zip(args, last))
                and all(a.data_ptr() == p for a, p in zip(args, self.last_ptrs)))

    @staticmethod
    def _real(flat, spec, values):
        """The real part of an output's flat buffer (packed at its front)."""
        real = [values[d] if d >= 0 else n for n, d in zip(spec["shape"], spec["dims"])]
        count = 1
        for n in real:
            count *= n
        return flat[:count].view(real)

    def _buffer(self, spec, role):
        """The context's own buffer of `spec`, flat (made once)."""
        key = (role, spec["name"])
        if key not in self.buffers:
            self.buffers[key] = self._context_view(spec, role)
        return self.buffers[key]

    def state(self, name):
        """A CPU torch tensor copy of persistent state `name` (a parameter,
        buffer or optimizer or RNG state), after the work on the stream."""
        spec = self._state_spec(name)
        torch = self.torch
        torch.cuda.current_stream(self.device).synchronize()
        out = torch.empty(spec["shape"], dtype=spec["dtype"])
        self._check(self.lib.cgc_engine_state_read(self.engine, name.encode(),
                                                   ctypes.c_void_p(out.data_ptr()), spec["bytes"]),
                    f"read state '{name}'")
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
        self._check(self.lib.cgc_engine_state_write(self.engine, name.encode(),
                                                    ctypes.c_void_p(value.data_ptr()),
                                                    spec["bytes"]), f"write state '{name}'")

    def _state_spec(self, name):
        if name not in self.states:
            raise KeyError(f"no state named '{name}' (the artifact has: "
                           f"{', '.join(sorted(self.states))})")
        return self.states[name]

    def _context_view(self, spec, role):
        """The context's own buffer of input or output `spec`, flat, as a
        torch tensor."""
        torch = self.torch
        view = (ctypes.c_byte * 64)()  # a cgc_tensor: its data pointer first
        fn = self.lib.cgc_context_output if role == "output" else self.lib.cgc_context_input
        self._check(fn(self.ctx, spec["name"].encode(), view), f"view '{spec['name']}'")
        ptr = ctypes.c_void_p.from_buffer(view).value
        count = 1
        for n in spec["shape"]:
            count *= n
        typestr = ("<i2" if spec["dtype"] == torch.bfloat16
                   else torch.empty(0, dtype=spec["dtype"]).numpy().dtype.str)
        holder = type("Buffer", (), {"__cuda_array_interface__": {
            "shape": (count,), "typestr": typestr, "data": (ptr, False), "version": 2}})()
        holder.owner = self  # The context's memory lives as long as a view of it.
        flat = torch.as_tensor(holder, device=self.device)
        flat._cgc_owner = holder
        self.output_ranges.append((ptr, ptr + spec["bytes"]))
        return flat.view(spec["dtype"]) if spec["dtype"] == torch.bfloat16 else flat

    def __del__(self):
        lib = getattr(self, "lib", None)
        if lib is not None:
            try:  # Launches on torch's streams may still use the context.
                self.torch.cuda.synchronize(self.device)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass
            if self.ctx:
                lib.cgc_context_destroy(self.ctx)
            if self.engine:
                lib.cgc_engine_destroy(self.engine)


def load(path, device=None):
    """A callable running the artifact at `path` on torch CUDA tensors."""
    return Artifact(path, device)


def compile(module, example_args, path=None, dynamic_shapes=None, cgc=None, flags=()):  # noqa: A001
    """Exports `module` (cgc.export), compiles it with the `cgc` tool and
    loads the artifact: a callable on torch CUDA tensors."""
    import shutil
    import subprocess
    import tempfile
    from .torch_export import export
    work = tempfile.mkdtemp(prefix="cgc-compile-")
    try:
        ir_path = os.path.join(work, "model.json")
        export(module, example_args, ir_path, dynamic_shapes=dynamic_shapes)
        art = path or os.path.join(work, "model.cgc")
        tool = cgc or os.environ.get("CGC", "cgc")
        r = subprocess.run([tool, ir_path, "-o", art, *flags], capture_output=True, text=True)
        if r.returncode:
            raise CgcError(r.stderr.strip())
        return load(art)  # (the engine holds the artifact's bytes)
    finally:
        shutil.rmtree(work, ignore_errors=True)
