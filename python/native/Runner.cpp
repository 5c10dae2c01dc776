//===- Runner.cpp - cgc._native: the runtime as a Python extension ---------===//
//
// One class, Runner: an engine and one context of the runtime's C ABI
// (cgc/cgc_runtime.h), with the manifest, binding, graph selection, state
// and counters as methods, and a replay fast path as __call__.
//
// The fast path: when every argument is a tensor of its input's dtype, on
// the artifact's device, contiguous, of the full (bucket) shape the graph
// was last picked for, and outside the context's output buffers, __call__
// binds the pointers that changed, replays the graph on torch's current
// stream and returns the output views that the last slow call remembered.
// Anything else (a first call, a new size, an input smaller than its
// bucket, fresh outputs, a wrong argument) goes to the Python subclass's
// `_slow_call`, which checks, explains errors, copies and picks graphs
// (python/cgc/runtime.py). The fast path allocates nothing on the device
// and calls no Python code but tensor attribute reads and torch's stream
// getter.
//
//===----------------------------------------------------------------------===//
#include "cgc/cgc_runtime.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace nb = nanobind;

namespace {

// A failed runtime call; Python sees cgc.CgcError.
struct CgcFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(cgc_status status, const std::string &what) {
  if (status != CGC_OK)
    throw CgcFailure("cgc: cannot " + what + ": " + cgc_last_error());
}

// The IR's name of a runtime dtype (docs/ir.md).
const char *dtypeName(int32_t dtype) {
  switch (static_cast<cgc_dtype>(dtype)) {
  case CGC_DTYPE_F32: return "f32";
  case CGC_DTYPE_F16: return "f16";
  case CGC_DTYPE_BF16: return "bf16";
  case CGC_DTYPE_I32: return "i32";
  case CGC_DTYPE_I64: return "i64";
  case CGC_DTYPE_BOOL: return "bool";
  }
  throw CgcFailure("cgc: the artifact has an unknown dtype " + std::to_string(dtype));
}

// One user input as the fast path checks it.
struct InputSpec {
  std::string name;
  nb::object dtype;            // the torch dtype object (compared by identity)
  std::vector<int64_t> shape;  // the full (bucket) shape
  void *bound = nullptr;       // what cgc_context_bind last got
};

class Runner {
public:
  Runner(const std::string &path, int device) : device_(device) {
    check(cgc_engine_load_file(path.c_str(), device, &engine_), "load " + path);
    cgc_status made = cgc_context_create(engine_, nullptr, 0, &ctx_);
    if (made != CGC_OK) {
      std::string message = cgc_last_error();
      cgc_engine_destroy(engine_);
      throw CgcFailure("cgc: cannot create a context: " + message);
    }
  }
  ~Runner() {
    cgc_context_destroy(ctx_);
    cgc_engine_destroy(engine_);
  }
  Runner(const Runner &) = delete;
  Runner &operator=(const Runner &) = delete;

  // -- the manifest

  nb::list tensors(int role) const {
    nb::list out;
    auto r = static_cast<cgc_tensor_role>(role);
    for (size_t k = 0, n = cgc_engine_num_tensors(engine_, r); k < n; ++k) {
      cgc_tensor_info info;
      check(cgc_engine_tensor_info(engine_, r, k, &info), "read the manifest");
      nb::list shape, dims;
      for (int32_t a = 0; a < info.ndim; ++a) {
        int64_t dim = -1;
        check(cgc_engine_tensor_dim(engine_, r, k, a, &dim), "read the manifest");
        shape.append(info.shape[a]);
        dims.append(dim);
      }
      nb::dict t;
      t["name"] = info.name;
      t["kind"] = info.kind;
      t["dtype"] = dtypeName(info.dtype);
      t["shape"] = shape;
      t["dims"] = dims;
      t["bytes"] = info.bytes;
      out.append(t);
    }
    return out;
  }

  nb::list dims() const {
    nb::list out;
    for (size_t d = 0, n = cgc_engine_num_dims(engine_); d < n; ++d) {
      const char *name = nullptr;
      int64_t lo = 0, hi = 0;
      check(cgc_engine_dim_info(engine_, d, &name, &lo, &hi), "read the dims");
      out.append(nb::make_tuple(name, lo, hi));
    }
    return out;
  }

  // -- the slow path's steps

  size_t selectGraph(const std::vector<int64_t> &dims) const {
    size_t graph = 0;
    check(cgc_engine_select_graph(engine_, dims.data(), dims.size(), &graph), "pick a graph");
    return graph;
  }

  // Binds `ptr` (0: the context's own slot) to input or output `name`, when
  // it changed since the last bind of that name.
  void bind(const std::string &name, uintptr_t ptr) {
    void *p = reinterpret_cast<void *>(ptr);
    auto [it, fresh] = bound_.try_emplace(name, nullptr);
    if (!fresh && it->second == p)
      return;
    check(cgc_context_bind(ctx_, name.c_str(), p), "bind '" + name + "'");
    it->second = p;
    for (InputSpec &in : inputs_)
      if (in.name == name)
        in.bound = p;
  }

  uintptr_t contextBuffer(const std::string &name, bool output) const {
    cgc_tensor view;
    cgc_status s = output ? cgc_context_output(ctx_, name.c_str(), &view)
                          : cgc_context_input(ctx_, name.c_str(), &view);
    check(s, "view '" + name + "'");
    return reinterpret_cast<uintptr_t>(view.data);
  }

  void run(size_t graph, const std::vector<int64_t> &dims, uintptr_t stream) const {
    check(cgc_run(ctx_, graph, dims.data(), dims.size(), reinterpret_cast<void *>(stream)),
          "run");
  }

  void stateRead(const std::string &name, uintptr_t host, size_t bytes) const {
    check(cgc_engine_state_read(engine_, name.c_str(), reinterpret_cast<void *>(host), bytes),
          "read state '" + name + "'");
  }
  void stateWrite(const std::string &name, uintptr_t host, size_t bytes) const {
    check(cgc_engine_state_write(engine_, name.c_str(), reinterpret_cast<const void *>(host),
                                 bytes),
          "write state '" + name + "'");
  }

  nb::dict counters() const {
    cgc_counters c;
    check(cgc_context_counters(ctx_, &c), "read the counters");
    nb::dict out;
    out["graphs_created"] = c.graphs_created;
    out["graphs_instantiated"] = c.graphs_instantiated;
    out["captures"] = c.captures;
    out["node_updates"] = c.node_updates;
    out["launches"] = c.launches;
    out["dim_writes"] = c.dim_writes;
    return out;
  }

  // -- the fast path

  // What the fast path checks against: the user inputs (name, torch dtype,
  // full shape), torch.Tensor, and torch's raw current-stream getter.
  void configure(nb::list inputs, nb::object tensorType, nb::object streamOf) {
    inputs_.clear();
    for (nb::handle spec : inputs) {
      nb::tuple t = nb::cast<nb::tuple>(spec);
      inputs_.push_back({nb::cast<std::string>(t[0]), nb::borrow(t[1]),
                         nb::cast<std::vector<int64_t>>(t[2])});
    }
    tensorType_ = tensorType;
    streamOf_ = streamOf;
  }

  // The slow path's outcome for the fast path to repeat: the graph, the
  // dims, the results to return, and the output buffers' address ranges.
  void remember(size_t graph, const std::vector<int64_t> &dims, nb::object results,
                const std::vector<std::pair<uintptr_t, uintptr_t>> &outputRanges) {
    graph_ = graph;
    dims_ = dims;
    results_ = results;
    outputRanges_ = outputRanges;
  }
  void forget() { results_ = nb::object(); }

  nb::object call(nb::handle self, nb::args args, nb::kwargs kwargs) {
    if (!results_.is_valid() || kwargs.size() != 0 || args.size() != inputs_.size() ||
        !fastArguments(args))
      return self.attr("_slow_call")(*args, **kwargs);
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (inputs_[i].bound != pending_[i])
        bind(inputs_[i].name, reinterpret_cast<uintptr_t>(pending_[i]));
    uintptr_t stream = nb::cast<uintptr_t>(streamOf_(device_));
    run(graph_, dims_, stream);
    return results_;
  }

private:
  // Whether every argument passes the fast path's checks; their pointers
  // are left in pending_.
  bool fastArguments(nb::args args) {
    pending_.resize(inputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      nb::handle x = args[i];
      const InputSpec &spec = inputs_[i];
      if (PyObject_IsInstance(x.ptr(), tensorType_.ptr()) != 1 || !x.attr(sDtype_).is(spec.dtype) ||
          nb::cast<int>(x.attr(sGetDevice_)()) != device_ ||
          !nb::cast<bool>(x.attr(sIsContiguous_)()) || !fullShape(x, spec))
        return false;
      uintptr_t ptr = nb::cast<uintptr_t>(x.attr(sDataPtr_)());
      for (auto [lo, hi] : outputRanges_)
        if (lo <= ptr && ptr < hi)
          return false;
      pending_[i] = reinterpret_cast<void *>(ptr);
    }
    return true;
  }

  static bool fullShape(nb::handle x, const InputSpec &spec) {
    nb::tuple shape = nb::cast<nb::tuple>(x.attr(sShape_));
    if (shape.size() != spec.shape.size())
      return false;
    for (size_t a = 0; a < spec.shape.size(); ++a)
      if (nb::cast<int64_t>(shape[a]) != spec.shape[a])
        return false;
    return true;
  }

  cgc_engine engine_ = nullptr;
  cgc_context ctx_ = nullptr;
  int device_;
  std::vector<InputSpec> inputs_;
  std::unordered_map<std::string, void *> bound_; // every name bound
  std::vector<void *> pending_;
  nb::object tensorType_, streamOf_, results_;
  size_t graph_ = 0;
  std::vector<int64_t> dims_;
  std::vector<std::pair<uintptr_t, uintptr_t>> outputRanges_;

public:
  // Interned attribute names (made at import, never freed).
  static nb::handle sDtype_, sGetDevice_, sIsContiguous_, sShape_, sDataPtr_;
};

nb::handle Runner::sDtype_, Runner::sGetDevice_, Runner::sIsContiguous_, Runner::sShape_,
    Runner::sDataPtr_;

} // namespace

NB_MODULE(_native, m) {
  m.doc() = "cgc's runtime (cgc/cgc_runtime.h) for python/cgc/runtime.py";
  nb::exception<CgcFailure>(m, "CgcError", PyExc_RuntimeError);
  // Output views (torch tensors) keep their Runner alive, and torch does
  // not free every tensor before the interpreter exits: Runners still alive
  // then are not leaks of this binding.
  nb::set_leak_warnings(false);
  Runner::sDtype_ = nb::str("dtype").release();
  Runner::sGetDevice_ = nb::str("get_device").release();
  Runner::sIsContiguous_ = nb::str("is_contiguous").release();
  Runner::sShape_ = nb::str("shape").release();
  Runner::sDataPtr_ = nb::str("data_ptr").release();
  m.def("abi_version", &cgc_abi_version);
  m.def("device_count", [] {
    int count = 0;
    check(cgc_device_count(&count), "count the CUDA devices");
    return count;
  });
  nb::class_<Runner>(m, "Runner", nb::dynamic_attr())
      .def(nb::init<const std::string &, int>(), nb::arg("path"), nb::arg("device"))
      .def("tensors", &Runner::tensors, nb::arg("role"))
      .def("dims", &Runner::dims)
      .def("select_graph", &Runner::selectGraph, nb::arg("dims"))
      .def("bind", &Runner::bind, nb::arg("name"), nb::arg("ptr"))
      .def("context_buffer", &Runner::contextBuffer, nb::arg("name"), nb::arg("output"))
      .def("run", &Runner::run, nb::arg("graph"), nb::arg("dims"), nb::arg("stream"))
      .def("state_read", &Runner::stateRead, nb::arg("name"), nb::arg("host"), nb::arg("bytes"))
      .def("state_write", &Runner::stateWrite, nb::arg("name"), nb::arg("host"),
           nb::arg("bytes"))
      .def("counters", &Runner::counters)
      .def("configure", &Runner::configure)
      .def("remember", &Runner::remember)
      .def("forget", &Runner::forget)
      .def("__call__", [](nb::pointer_and_handle<Runner> self, nb::args args,
                          nb::kwargs kwargs) { return self.p->call(self.h, args, kwargs); });
}
