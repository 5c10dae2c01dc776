//===- Runner.cpp - cgc._native: the runtime as a Python extension ---------===//
//
// One class, Runner: an engine and one context of the runtime's C ABI
// (cgc/cgc_runtime.h), with the manifest, binding, graph selection, state
// and counters as methods, and a replay fast path as __call__.
//
// The fast path: when every argument is a tensor of its input's dtype, on
// the artifact's device, contiguous, with its dims within their bounds and
// at values a slow call ran before, __call__ binds the pointers that changed
// of the inputs whose size is their graph's (at its buckets), copies the
// smaller ones into the context's slots (cgc_context_copy_input, on the
// stream: the graph reads whole buckets),
// replays that graph on torch's current stream and returns the output views
// that slow call remembered (with fresh_outputs=True, their clones). Anything
// else (a first call, new dim values, an input to be bound that lies inside
// an output buffer, a wrong argument) goes to the Python subclass's `_slow_call`,
// which checks, explains errors, copies and picks graphs
// (python/cgc/runtime.py). The fast path allocates nothing but the clones
// asked for; it calls into Python only for each tensor's dtype, shape,
// get_device(), is_contiguous() and data_ptr(), for torch's stream getter
// and for the clones.
//
//===----------------------------------------------------------------------===//
#include "cgc/cgc_runtime.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <map>
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

// cgc_context_bind's alignment: a less aligned input is copied instead.
constexpr uintptr_t kBindAlignment = 16;

// One user input as the fast path checks it.
struct InputSpec {
  std::string name;
  nb::object dtype;             // the torch dtype object (compared by identity)
  std::vector<int64_t> shape;   // the full shape (every dim at its maximum)
  std::vector<int64_t> dimOf;   // per axis: the engine dim it follows, or -1
  size_t elementBytes = 0;
};

// What a call at one set of dim values repeats: its graph, the extent the
// graph reads in each engine dim (its buckets) and its results.
struct Remembered {
  size_t graph = 0;
  std::vector<int64_t> extents;
  nb::object results;
};

// The ranks a data-parallel artifact's engine joins (cgc_engine_join):
// NCCL's unique id from rank 0, this rank, the world size, the watchdog's
// timeout in ms; an empty id: not data-parallel.
struct RankSpec {
  std::string uniqueId;
  int rank = 0, world = 1;
  uint32_t timeoutMs = 0;
};

// A loaded artifact's engine and context (Python: cgc._native.Loaded). The
// Runner and every view of the context's buffers hold it, so that the
// memory outlives whichever of them goes last.
struct Loaded {
  Loaded(const std::string &path, int device, const RankSpec &ranks) {
    if (!ranks.uniqueId.empty() && ranks.uniqueId.size() != CGC_NCCL_UNIQUE_ID_BYTES)
      throw CgcFailure("cgc: an NCCL unique id has " +
                       std::to_string(CGC_NCCL_UNIQUE_ID_BYTES) + " bytes");
    check(cgc_engine_load_file(path.c_str(), device, &engine), "load " + path);
    cgc_status made = join(ranks);
    if (made == CGC_OK)
      made = cgc_context_create(engine, nullptr, 0, &ctx);
    if (made != CGC_OK) {
      std::string message = cgc_last_error();
      cgc_engine_destroy(engine);
      throw CgcFailure("cgc: cannot create a context: " + message);
    }
  }
  cgc_status join(const RankSpec &spec) {
    if (spec.uniqueId.empty())
      return CGC_OK;
    cgc_ranks ranks = {nullptr, spec.uniqueId.data(), spec.rank, spec.world,
                       spec.timeoutMs};
    return cgc_engine_join(engine, &ranks);
  }
  ~Loaded() {
    cgc_context_destroy(ctx);
    cgc_engine_destroy(engine);
  }
  Loaded(const Loaded &) = delete;
  Loaded &operator=(const Loaded &) = delete;
  cgc_engine engine = nullptr;
  cgc_context ctx = nullptr;
};

class Runner {
public:
  Runner(const std::string &path, int device, const RankSpec &ranks)
      : loaded_(nb::cast(new Loaded(path, device, ranks), nb::rv_policy::take_ownership)),
        engine_(nb::cast<Loaded &>(loaded_).engine), ctx_(nb::cast<Loaded &>(loaded_).ctx),
        device_(device) {
    for (size_t d = 0, n = cgc_engine_num_dims(engine_); d < n; ++d) {
      const char *name = nullptr;
      int64_t lo = 0, hi = 0;
      check(cgc_engine_dim_info(engine_, d, &name, &lo, &hi), "read the dims");
      dimNames_.push_back(name);
      bounds_.push_back({lo, hi});
    }
  }
  Runner(const Runner &) = delete;
  Runner &operator=(const Runner &) = delete;

  nb::object loaded() const { return loaded_; }

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

  // (name, min, max) of every engine dim, in order.
  nb::list dims() const {
    nb::list out;
    for (size_t d = 0; d < bounds_.size(); ++d)
      out.append(nb::make_tuple(dimNames_[d], bounds_[d].first, bounds_[d].second));
    return out;
  }

  // -- the slow path's steps

  size_t selectGraph(const std::vector<int64_t> &dims) const {
    size_t graph = 0;
    check(cgc_engine_select_graph(engine_, dims.data(), dims.size(), &graph), "pick a graph");
    return graph;
  }

  // Binds `ptr` (0: the context's own slot) to input or output `name`, when
  // it differs from what that name has (the context's slot at first).
  void bind(const std::string &name, uintptr_t ptr) {
    void *p = reinterpret_cast<void *>(ptr);
    auto it = bound_.try_emplace(name, nullptr).first;
    if (it->second == p)
      return;
    cgc_status bound = cgc_context_bind(ctx_, name.c_str(), p);
    if (bound != CGC_OK) // (the message is built only on failure)
      check(bound, "bind '" + name + "'");
    it->second = p;
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

  // The device address of persistent state `name`: copies on the caller's
  // stream read and write it in order with the runs (no synchronize).
  // (Per-context state, scope "context": the context's own copy.)
  uintptr_t stateData(const std::string &name) const {
    void *device = nullptr;
    if (cgc_context_state_data(ctx_, name.c_str(), &device, nullptr) == CGC_OK)
      return reinterpret_cast<uintptr_t>(device);
    check(cgc_engine_state_data(engine_, name.c_str(), &device, nullptr),
          "find state '" + name + "'");
    return reinterpret_cast<uintptr_t>(device);
  }

  bool perContext(const std::string &name) const {
    void *device = nullptr;
    return cgc_context_state_data(ctx_, name.c_str(), &device, nullptr) == CGC_OK;
  }

  // Every per-context state tensor back to its initial value, on `stream`.
  void resetState(uintptr_t stream) const {
    check(cgc_context_reset_state(ctx_, reinterpret_cast<void *>(stream)),
          "reset the context's state");
  }

  size_t findGraph(const std::string &name) const {
    size_t graph = 0;
    check(cgc_engine_find_graph(engine_, name.c_str(), &graph), "find graph '" + name + "'");
    return graph;
  }

  void stateRead(const std::string &name, uintptr_t host, size_t bytes) const {
    void *to = reinterpret_cast<void *>(host);
    check(perContext(name) ? cgc_context_state_read(ctx_, name.c_str(), to, bytes)
                           : cgc_engine_state_read(engine_, name.c_str(), to, bytes),
          "read state '" + name + "'");
  }
  void stateWrite(const std::string &name, uintptr_t host, size_t bytes) const {
    const void *from = reinterpret_cast<const void *>(host);
    check(perContext(name) ? cgc_context_state_write(ctx_, name.c_str(), from, bytes)
                           : cgc_engine_state_write(engine_, name.c_str(), from, bytes),
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
  // full shape, engine dim per axis, element size), torch.Tensor, and
  // torch's raw current-stream getter.
  void configure(nb::list inputs, nb::object tensorType, nb::object streamOf) {
    inputs_.clear();
    for (nb::handle spec : inputs) {
      nb::tuple t = nb::cast<nb::tuple>(spec);
      inputs_.push_back({nb::cast<std::string>(t[0]), nb::borrow(t[1]),
                         nb::cast<std::vector<int64_t>>(t[2]),
                         nb::cast<std::vector<int64_t>>(t[3]), nb::cast<size_t>(t[4])});
    }
    tensorType_ = tensorType;
    streamOf_ = streamOf;
  }

  // A slow call's outcome for the fast path to repeat at the same dims: the
  // graph and the results; and the output buffers' address ranges.
  void remember(size_t graph, const std::vector<int64_t> &dims, nb::object results,
                const std::vector<std::pair<uintptr_t, uintptr_t>> &outputRanges) {
    remembered_[dims] = {graph, graphExtents(graph), results};
    outputRanges_ = outputRanges;
  }

  // Per engine dim, the extent the graph reads: its bucket (or bound
  // value), else the dim's maximum (cgc_engine_graph_dim).
  std::vector<int64_t> graphExtents(size_t graph) const {
    std::vector<int64_t> extents(bounds_.size());
    for (size_t d = 0; d < bounds_.size(); ++d) {
      check(cgc_engine_graph_dim(engine_, graph, d, &extents[d]), "read a graph's dims");
      if (extents[d] < 0)
        extents[d] = bounds_[d].second;
    }
    return extents;
  }
  size_t bindAlignment() const { return kBindAlignment; }

  nb::object call(nb::handle self, nb::args args, nb::kwargs kwargs) {
    bool fresh = false;
    if (remembered_.empty() || !readFresh(kwargs, fresh) || args.size() != inputs_.size() ||
        !readArguments(args))
      return self.attr("_slow_call")(*args, **kwargs);
    auto found = remembered_.find(dims_);
    if (found == remembered_.end() || !readBindable(found->second.extents))
      return self.attr("_slow_call")(*args, **kwargs);
    uintptr_t stream = nb::cast<uintptr_t>(streamOf_(device_));
    for (size_t i = 0; i < inputs_.size(); ++i) {
      void *target = full_[i] ? pending_[i] : nullptr; // not full: into the own slot
      bind(inputs_[i].name, reinterpret_cast<uintptr_t>(target));
      if (!full_[i]) {
        cgc_status copied = cgc_context_copy_input(ctx_, inputs_[i].name.c_str(), pending_[i],
                                                   bytes_[i], reinterpret_cast<void *>(stream));
        if (copied != CGC_OK) // (the message is built only on failure)
          check(copied, "copy input '" + inputs_[i].name + "'");
      }
    }
    run(found->second.graph, dims_, stream);
    return fresh ? clones(found->second.results) : found->second.results;
  }

private:
  // Whether the keywords are none or fresh_outputs=<bool> (read into fresh).
  static bool readFresh(nb::kwargs kwargs, bool &fresh) {
    if (kwargs.size() == 0)
      return true;
    if (kwargs.size() != 1 || !kwargs.contains("fresh_outputs") ||
        !PyBool_Check(kwargs["fresh_outputs"].ptr()))
      return false;
    fresh = nb::cast<bool>(kwargs["fresh_outputs"]);
    return true;
  }

  // New tensors holding the results (one tensor, or a tuple of them),
  // copied on torch's current stream: what the next call cannot overwrite.
  static nb::object clones(nb::handle results) {
    if (!nb::isinstance<nb::tuple>(results))
      return results.attr("clone")();
    nb::list copies;
    for (nb::handle r : results)
      copies.append(r.attr("clone")());
    return nb::tuple(copies);
  }

  // Whether every argument passes the fast path's checks (a tensor of its
  // input's dtype, on the device, contiguous, each dim within its bounds
  // and equal across inputs). Leaves the dims in dims_, and per input its
  // pointer, shape and bytes.
  bool readArguments(nb::args args) {
    size_t n = inputs_.size();
    pending_.resize(n);
    full_.resize(n);
    shape_.resize(n);
    bytes_.resize(n);
    dims_.resize(bounds_.size());
    seen_.assign(bounds_.size(), false);
    for (size_t d = 0; d < bounds_.size(); ++d)
      dims_[d] = bounds_[d].second;
    for (size_t i = 0; i < n; ++i) {
      nb::handle x = args[i];
      const InputSpec &spec = inputs_[i];
      if (PyObject_IsInstance(x.ptr(), tensorType_.ptr()) != 1 ||
          !x.attr(sDtype_).is(spec.dtype) || nb::cast<int>(x.attr(sGetDevice_)()) != device_ ||
          !nb::cast<bool>(x.attr(sIsContiguous_)()) || !readShape(x, i))
        return false;
      pending_[i] = reinterpret_cast<void *>(nb::cast<uintptr_t>(x.attr(sDataPtr_)()));
    }
    return true;
  }

  // Per input, whether it is bound (its size is the graph's at \p extents
  // and it is aligned; else copied, as by the slow path) into full_; false
  // for a bound one inside an output buffer (the slow path copies it).
  bool readBindable(const std::vector<int64_t> &extents) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const InputSpec &spec = inputs_[i];
      uintptr_t ptr = reinterpret_cast<uintptr_t>(pending_[i]);
      bool full = ptr % kBindAlignment == 0;
      for (size_t a = 0; a < spec.shape.size(); ++a)
        full = full && (spec.dimOf[a] < 0 || shape_[i][a] == extents[spec.dimOf[a]]);
      full_[i] = full;
      for (auto [lo, hi] : outputRanges_)
        if (full && lo <= ptr && ptr < hi)
          return false;
    }
    return true;
  }

  // Input i's shape against its spec: sets shape_[i], bytes_[i] and the
  // dims it follows; false where the checks of the slow path would raise.
  bool readShape(nb::handle x, size_t i) {
    const InputSpec &spec = inputs_[i];
    nb::tuple shape = nb::cast<nb::tuple>(x.attr(sShape_));
    if (shape.size() != spec.shape.size())
      return false;
    shape_[i].resize(spec.shape.size()); // (allocates on an input's first call only)
    size_t count = 1;
    for (size_t a = 0; a < spec.shape.size(); ++a) {
      int64_t extent = nb::cast<int64_t>(shape[a]);
      int64_t d = spec.dimOf[a];
      if (d < 0 ? extent != spec.shape[a]
                : extent < bounds_[d].first || extent > bounds_[d].second ||
                      (seen_[d] && dims_[d] != extent))
        return false;
      if (d >= 0)
        dims_[d] = extent, seen_[d] = true;
      shape_[i][a] = extent;
      count *= static_cast<size_t>(extent);
    }
    bytes_[i] = count * spec.elementBytes;
    return true;
  }

  nb::object loaded_; // the Loaded that owns engine_ and ctx_
  cgc_engine engine_ = nullptr;
  cgc_context ctx_ = nullptr;
  int device_;
  std::vector<std::string> dimNames_;
  std::vector<InputSpec> inputs_;
  std::unordered_map<std::string, void *> bound_; // what each name is bound to
  std::vector<std::pair<int64_t, int64_t>> bounds_; // per engine dim: min, max
  nb::object tensorType_, streamOf_;
  std::map<std::vector<int64_t>, Remembered> remembered_; // by dim values
  std::vector<std::pair<uintptr_t, uintptr_t>> outputRanges_;
  // The call being read (kept to allocate nothing per call).
  std::vector<void *> pending_;
  std::vector<bool> full_, seen_;
  std::vector<std::vector<int64_t>> shape_;
  std::vector<size_t> bytes_;
  std::vector<int64_t> dims_;

public:
  // Interned attribute names (made at import, never freed).
  static nb::handle sDtype_, sGetDevice_, sIsContiguous_, sShape_, sDataPtr_;
};

nb::handle Runner::sDtype_, Runner::sGetDevice_, Runner::sIsContiguous_, Runner::sShape_,
    Runner::sDataPtr_;

} // namespace

NB_MODULE(_native, m) {
  m.doc() = "cgc's runtime (cgc/cgc_runtime.h) for python/cgc/runtime.py";
  // Callables that torch's caches hold (torch.compile's backend, Dynamo's
  // code cache) are still alive when the interpreter exits, which Python
  // does not collect: nanobind's exit report of them would be noise.
  nb::set_leak_warnings(false);
  nb::exception<CgcFailure>(m, "CgcError", PyExc_RuntimeError);
  Runner::sDtype_ = nb::str("dtype").release();
  Runner::sGetDevice_ = nb::str("get_device").release();
  Runner::sIsContiguous_ = nb::str("is_contiguous").release();
  Runner::sShape_ = nb::str("shape").release();
  Runner::sDataPtr_ = nb::str("data_ptr").release();
  m.def("abi_version", &cgc_abi_version);
  m.def("nccl_unique_id", [] {
    char id[CGC_NCCL_UNIQUE_ID_BYTES];
    check(cgc_nccl_unique_id(id, sizeof id), "make an NCCL unique id");
    return nb::bytes(id, sizeof id);
  });
  m.def("device_count", [] {
    int count = 0;
    check(cgc_device_count(&count), "count the CUDA devices");
    return count;
  });
  nb::class_<Loaded>(m, "Loaded", "A loaded artifact's engine and context (opaque).");
  // Underscored: the steps of runtime.py's slow path, not for callers (a
  // bind from outside would break what the fast path remembers).
  nb::class_<Runner>(m, "Runner", nb::dynamic_attr())
      .def("__init__",
           [](Runner *self, const std::string &path, int device, nb::object ranks) {
             RankSpec spec;
             if (!ranks.is_none()) { // (unique id bytes, rank, world, timeout ms)
               nb::tuple t = nb::cast<nb::tuple>(ranks);
               nb::bytes id = nb::cast<nb::bytes>(t[0]);
               spec.uniqueId.assign(id.c_str(), id.size());
               spec.rank = nb::cast<int>(t[1]);
               spec.world = nb::cast<int>(t[2]);
               spec.timeoutMs = nb::cast<uint32_t>(t[3]);
             }
             new (self) Runner(path, device, spec);
           },
           nb::arg("path"), nb::arg("device"), nb::arg("ranks") = nb::none())
      .def_prop_ro("_loaded", &Runner::loaded)
      .def_prop_ro("_bind_alignment", &Runner::bindAlignment)
      .def("_tensors", &Runner::tensors, nb::arg("role"))
      .def("_dims", &Runner::dims)
      .def("_select_graph", &Runner::selectGraph, nb::arg("dims"))
      .def("_bind", &Runner::bind, nb::arg("name"), nb::arg("ptr"))
      .def("_context_buffer", &Runner::contextBuffer, nb::arg("name"), nb::arg("output"))
      .def("_run", &Runner::run, nb::arg("graph"), nb::arg("dims"), nb::arg("stream"))
      .def("_state_data", &Runner::stateData, nb::arg("name"))
      .def("_reset_state", &Runner::resetState, nb::arg("stream"))
      .def("_find_graph", &Runner::findGraph, nb::arg("name"))
      .def("_state_read", &Runner::stateRead, nb::arg("name"), nb::arg("host"),
           nb::arg("bytes"))
      .def("_state_write", &Runner::stateWrite, nb::arg("name"), nb::arg("host"),
           nb::arg("bytes"))
      .def("_configure", &Runner::configure)
      .def("_remember", &Runner::remember)
      .def("_graph_extents", &Runner::graphExtents, nb::arg("graph"))
      .def("counters", &Runner::counters)
      .def("__call__", [](nb::pointer_and_handle<Runner> self, nb::args args,
                          nb::kwargs kwargs) { return self.p->call(self.h, args, kwargs); });
}
