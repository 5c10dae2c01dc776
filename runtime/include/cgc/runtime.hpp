//===- runtime.hpp - C++ RAII wrapper over cgc_runtime.h --------*- C++ -*-===//
//
// Header-only, move-only owners for engines and contexts. Errors are
// reported as cgc::Status values carrying the thread's last error message;
// no exceptions are thrown.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_HPP
#define CGC_RUNTIME_HPP

#include "cgc/cgc_runtime.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace cgc {

struct Status {
  cgc_status code = CGC_OK;
  std::string message;
  explicit operator bool() const { return code == CGC_OK; }
  static Status from(cgc_status s) {
    return s == CGC_OK ? Status{} : Status{s, cgc_last_error()};
  }
};

class Engine {
public:
  Engine() = default;
  Engine(Engine &&o) noexcept : handle(std::exchange(o.handle, nullptr)) {}
  Engine &operator=(Engine &&o) noexcept {
    std::swap(handle, o.handle);
    return *this;
  }
  ~Engine() { cgc_engine_destroy(handle); }

  static Status loadFile(const std::string &path, Engine &out,
                         int device = 0) {
    cgc_engine e = nullptr;
    Status s = Status::from(cgc_engine_load_file(path.c_str(), device, &e));
    if (s)
      out = Engine(e);
    return s;
  }
  static Status loadMemory(const void *data, size_t size, Engine &out,
                           int device = 0) {
    cgc_engine e = nullptr;
    Status s = Status::from(cgc_engine_load_memory(data, size, device, &e));
    if (s)
      out = Engine(e);
    return s;
  }
  /// An artifact in memory whose weights stay in their own file (see
  /// cgc_engine_load_memory_weights).
  static Status loadMemoryWeights(const void *data, size_t size,
                                  const std::string &weightsPath, Engine &out,
                                  int device = 0) {
    cgc_engine e = nullptr;
    Status s = Status::from(cgc_engine_load_memory_weights(
        data, size, weightsPath.c_str(), device, &e));
    if (s)
      out = Engine(e);
    return s;
  }

  cgc_engine get() const { return handle; }
  size_t numGraphs() const { return cgc_engine_num_graphs(handle); }
  /// The graph compiled for these dim values (see cgc_engine_select_graph).
  Status selectGraph(const std::vector<int64_t> &dims, size_t &index) const {
    return Status::from(
        cgc_engine_select_graph(handle, dims.data(), dims.size(), &index));
  }
  /// The extent \p graph is compiled for in \p dim, or -1 (see
  /// cgc_engine_graph_dim).
  Status graphDim(size_t graph, size_t dim, int64_t &extent) const {
    return Status::from(cgc_engine_graph_dim(handle, graph, dim, &extent));
  }
  /// Matrix products run by cuBLASLt (see cgc_engine_num_products).
  size_t numProducts() const { return cgc_engine_num_products(handle); }
  Status describeProduct(size_t index, std::string &line) const {
    std::vector<char> buffer(512);
    while (true) {
      cgc_status s = cgc_engine_describe_product(handle, index, buffer.data(),
                                                 buffer.size());
      if (s != CGC_ERROR_INVALID_ARGUMENT || index >= numProducts() ||
          buffer.size() >= (size_t(1) << 20)) {
        if (s == CGC_OK)
          line = buffer.data();
        return Status::from(s);
      }
      buffer.resize(buffer.size() * 4); // The line did not fit.
    }
  }
  Status productAlgorithm(size_t index, std::array<uint64_t, 8> &algo) const {
    return Status::from(
        cgc_engine_get_product_algorithm(handle, index, algo.data()));
  }
  /// For contexts created afterwards; refused while any context exists.
  Status pinProductAlgorithm(size_t index,
                             const std::array<uint64_t, 8> &algo) {
    return Status::from(
        cgc_engine_pin_product_algorithm(handle, index, algo.data()));
  }
  /// Convolutions run by cuDNN (see cgc_engine_num_convolutions).
  size_t numConvolutions() const { return cgc_engine_num_convolutions(handle); }
  Status convolutionInfo(size_t index, cgc_convolution_info &info) const {
    return Status::from(cgc_engine_convolution_info(handle, index, &info));
  }
  Status stateRead(const std::string &name, void *dst, size_t bytes) const {
    return Status::from(cgc_engine_state_read(handle, name.c_str(), dst, bytes));
  }
  Status stateWrite(const std::string &name, const void *src, size_t bytes) {
    return Status::from(
        cgc_engine_state_write(handle, name.c_str(), src, bytes));
  }

private:
  explicit Engine(cgc_engine e) : handle(e) {}
  cgc_engine handle = nullptr;
};

class Context {
public:
  Context() = default;
  Context(Context &&o) noexcept : handle(std::exchange(o.handle, nullptr)) {}
  Context &operator=(Context &&o) noexcept {
    std::swap(handle, o.handle);
    return *this;
  }
  ~Context() { cgc_context_destroy(handle); }

  static Status create(const Engine &engine, Context &out,
                       void *arena = nullptr, size_t arenaBytes = 0) {
    cgc_context c = nullptr;
    Status s = Status::from(
        cgc_context_create(engine.get(), arena, arenaBytes, &c));
    if (s)
      out = Context(c);
    return s;
  }

  cgc_context get() const { return handle; }
  Status run(size_t graph = 0, const std::vector<int64_t> &dims = {},
             void *stream = nullptr) {
    return Status::from(
        cgc_run(handle, graph, dims.data(), dims.size(), stream));
  }
  Status runEager(size_t graph = 0, const std::vector<int64_t> &dims = {},
                  void *stream = nullptr) {
    return Status::from(
        cgc_run_eager(handle, graph, dims.data(), dims.size(), stream));
  }
  Status input(const std::string &name, cgc_tensor &t) {
    return Status::from(cgc_context_input(handle, name.c_str(), &t));
  }
  Status output(const std::string &name, cgc_tensor &t) {
    return Status::from(cgc_context_output(handle, name.c_str(), &t));
  }
  Status bind(const std::string &name, void *devicePtr) {
    return Status::from(cgc_context_bind(handle, name.c_str(), devicePtr));
  }
  Status writeInput(const std::string &name, const void *src, size_t bytes,
                    void *stream = nullptr) {
    return Status::from(
        cgc_context_write_input(handle, name.c_str(), src, bytes, stream));
  }
  Status readOutput(const std::string &name, void *dst, size_t bytes,
                    void *stream = nullptr) {
    return Status::from(
        cgc_context_read_output(handle, name.c_str(), dst, bytes, stream));
  }
  Status loopTrips(const std::string &loop, uint32_t &trips,
                   void *stream = nullptr) {
    return Status::from(
        cgc_context_loop_trips(handle, loop.c_str(), &trips, stream));
  }
  Status counters(cgc_counters &out) const {
    return Status::from(cgc_context_counters(handle, &out));
  }
  /// Per-context state (IR scope "context"): this context's copy.
  Status stateRead(const std::string &name, void *dst, size_t bytes) const {
    return Status::from(cgc_context_state_read(handle, name.c_str(), dst, bytes));
  }
  Status stateWrite(const std::string &name, const void *src, size_t bytes) {
    return Status::from(cgc_context_state_write(handle, name.c_str(), src, bytes));
  }
  Status resetState(void *stream = nullptr) {
    return Status::from(cgc_context_reset_state(handle, stream));
  }

private:
  explicit Context(cgc_context c) : handle(c) {}
  cgc_context handle = nullptr;
};

} // namespace cgc

#endif // CGC_RUNTIME_HPP
