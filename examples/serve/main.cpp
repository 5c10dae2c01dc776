//===- main.cpp - Serving requests with a pool of contexts ----------------===//
//
// How an application embeds cgc to serve: one engine (the weights, loaded
// once), a pool of contexts (each with its own arena, graphs and stream,
// owned by one worker thread), and a queue of requests between the
// clients and the workers. A request carries its inputs' bytes; a worker
// writes them into its context, replays the graph, reads the outputs back
// and completes the request. A request cancelled before a worker takes
// it completes as cancelled, without running; shutdown stops taking
// requests, cancels those still queued and joins the workers.
//
// As a benchmark it runs closed-loop clients (each sends a request, waits
// for it, sends the next) against a pool of 1 context and of N, for each
// client count, and prints throughput and latency percentiles. Every
// result is checked against the single-context result of the same inputs,
// byte for byte (a graph's results do not depend on which context ran it).
//
//   serve model.cgc [--contexts N] [--clients 1,4,16] [--seconds S]
//                   [--cancel-every K]
//
//===----------------------------------------------------------------------===//
#include <cgc/runtime.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

namespace {

/// Page-locked host memory: copies to and from the device run as DMA
/// without the driver's staging (whose pageable copies serialize across
/// threads), which is what lets several contexts overlap.
template <typename T> struct Pinned {
  using value_type = T;
  Pinned() = default;
  template <typename U> Pinned(const Pinned<U> &) {}
  T *allocate(size_t n) {
    void *p = nullptr;
    if (cudaMallocHost(&p, n * sizeof(T)) != cudaSuccess)
      throw std::bad_alloc();
    return static_cast<T *>(p);
  }
  void deallocate(T *p, size_t) { cudaFreeHost(p); }
  template <typename U> bool operator==(const Pinned<U> &) const { return true; }
  template <typename U> bool operator!=(const Pinned<U> &) const { return false; }
};
using Bytes = std::vector<uint8_t, Pinned<uint8_t>>; // inputs and a worker's outputs
using Result = std::vector<std::vector<uint8_t>>;      // a request's outputs
using Clock = std::chrono::steady_clock;

/// One tensor of the artifact's signature.
struct TensorSpec {
  std::string name;
  size_t bytes;
  int32_t dtype; ///< cgc_dtype
};

/// The artifact's user inputs and outputs.
struct Signature {
  std::vector<TensorSpec> inputs, outputs;
};

Signature signatureOf(const cgc::Engine &engine) {
  Signature sig;
  cgc_tensor_info info;
  for (size_t i = 0; i < cgc_engine_num_tensors(engine.get(), CGC_ROLE_INPUT); ++i) {
    cgc_engine_tensor_info(engine.get(), CGC_ROLE_INPUT, i, &info);
    if (std::strcmp(info.kind, "user_input") == 0)
      sig.inputs.push_back({info.name, info.bytes, info.dtype});
  }
  for (size_t i = 0; i < cgc_engine_num_tensors(engine.get(), CGC_ROLE_OUTPUT); ++i) {
    cgc_engine_tensor_info(engine.get(), CGC_ROLE_OUTPUT, i, &info);
    sig.outputs.push_back({info.name, info.bytes, info.dtype});
  }
  return sig;
}

/// One request: its inputs (one buffer per user input, in the
/// signature's order), then its outputs and how it ended.
struct Request {
  enum class End { Done, Cancelled, Failed };
  explicit Request(const std::vector<Bytes> &inputs) : inputs(inputs) {}
  const std::vector<Bytes> &inputs;
  Result outputs;
  std::atomic<bool> cancelled{false};
  std::promise<End> ended;
  std::string error;
};

/// The pool: worker threads, each owning a context and a stream of one
/// engine, taking requests from one queue.
class Server {
public:
  Server(const cgc::Engine &engine, const Signature &sig, int contexts) : sig(sig) {
    for (int k = 0; k < contexts; ++k) {
      cgc::Context ctx;
      if (cgc::Status s = cgc::Context::create(engine, ctx); !s) {
        std::fprintf(stderr, "serve: context: %s\n", s.message.c_str());
        std::exit(1);
      }
      workers.emplace_back(&Server::work, this, std::move(ctx));
    }
  }
  ~Server() { shutdown(); }

  std::shared_ptr<Request> submit(const std::vector<Bytes> &inputs) {
    auto r = std::make_shared<Request>(inputs);
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stopping) {
        r->ended.set_value(Request::End::Cancelled);
        return r;
      }
      queue.push_back(r);
    }
    ready.notify_one();
    return r;
  }

  /// Takes no more requests, cancels the queued ones, joins the workers
  /// (each finishes the request it runs).
  void shutdown() {
    std::deque<std::shared_ptr<Request>> left;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stopping)
        return;
      stopping = true;
      left.swap(queue);
    }
    ready.notify_all();
    for (auto &r : left)
      r->ended.set_value(Request::End::Cancelled);
    for (std::thread &t : workers)
      t.join();
  }

private:
  void work(cgc::Context ctx) {
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    std::vector<Bytes> outputs; // read here, then copied into the request
    for (const TensorSpec &output : sig.outputs)
      outputs.emplace_back(output.bytes);
    while (std::shared_ptr<Request> r = next())
      r->ended.set_value(serve(ctx, stream, outputs, *r));
    cudaStreamDestroy(stream);
  }

  std::shared_ptr<Request> next() {
    std::unique_lock<std::mutex> lock(mutex);
    ready.wait(lock, [&] { return stopping || !queue.empty(); });
    if (queue.empty())
      return nullptr;
    std::shared_ptr<Request> r = queue.front();
    queue.pop_front();
    return r;
  }

  Request::End serve(cgc::Context &ctx, cudaStream_t stream, std::vector<Bytes> &outputs,
                     Request &r) {
    if (r.cancelled.load())
      return Request::End::Cancelled;
    cgc::Status s;
    for (size_t i = 0; s && i < sig.inputs.size(); ++i)
      s = ctx.writeInput(sig.inputs[i].name, r.inputs[i].data(), r.inputs[i].size(), stream);
    if (s)
      s = ctx.run(0, {}, stream);
    for (size_t i = 0; s && i < sig.outputs.size(); ++i)
      if ((s = ctx.readOutput(sig.outputs[i].name, outputs[i].data(), outputs[i].size(),
                              stream)))
        r.outputs.emplace_back(outputs[i].begin(), outputs[i].end());
    if (s)
      return Request::End::Done;
    r.error = s.message;
    return Request::End::Failed;
  }

  const Signature &sig;
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::shared_ptr<Request>> queue;
  bool stopping = false;
  std::vector<std::thread> workers;
};

/// Input sets of random values (uniform in [-1, 1) for f32 inputs,
/// zero bytes for any other dtype).
std::vector<std::vector<Bytes>> inputSets(const Signature &sig, int count) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<std::vector<Bytes>> sets(count);
  for (auto &set : sets)
    for (const TensorSpec &input : sig.inputs) {
      Bytes b(input.bytes, 0);
      if (input.dtype == CGC_DTYPE_F32)
        for (size_t k = 0; k < input.bytes / 4; ++k) {
          float v = uniform(gen);
          std::memcpy(b.data() + 4 * k, &v, 4);
        }
      set.push_back(std::move(b));
    }
  return sets;
}

struct Load {
  double seconds = 0;
  std::vector<double> latenciesUs;
  int64_t cancelled = 0, wrong = 0, failed = 0;
};

/// `clients` closed-loop clients for `seconds` against `server`; every
/// `cancelEvery`-th request of a client is cancelled right after it is
/// submitted (it completes cancelled, or done if a worker took it first).
Load load(Server &server, const std::vector<std::vector<Bytes>> &sets,
          const std::vector<Result> &expected, int clients, double seconds, int cancelEvery) {
  std::vector<Load> each(clients);
  std::vector<std::thread> threads;
  const Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(seconds));
  auto start = Clock::now();
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      Load &mine = each[c];
      for (int64_t k = 0; Clock::now() < end; ++k) {
        size_t set = size_t(c * 7 + k) % sets.size();
        auto sent = Clock::now();
        std::shared_ptr<Request> r = server.submit(sets[set]);
        bool cancel = cancelEvery > 0 && k % cancelEvery == cancelEvery - 1;
        if (cancel)
          r->cancelled.store(true);
        Request::End how = r->ended.get_future().get();
        if (how == Request::End::Cancelled) {
          ++mine.cancelled;
          continue;
        }
        if (how == Request::End::Failed) {
          ++mine.failed;
          continue;
        }
        if (r->outputs != expected[set])
          ++mine.wrong;
        if (!cancel)
          mine.latenciesUs.push_back(
              std::chrono::duration<double, std::micro>(Clock::now() - sent).count());
      }
    });
  for (std::thread &t : threads)
    t.join();
  Load all;
  all.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const Load &r : each) {
    all.latenciesUs.insert(all.latenciesUs.end(), r.latenciesUs.begin(), r.latenciesUs.end());
    all.cancelled += r.cancelled;
    all.wrong += r.wrong;
    all.failed += r.failed;
  }
  std::sort(all.latenciesUs.begin(), all.latenciesUs.end());
  return all;
}

double percentile(const std::vector<double> &sorted, double p) {
  if (sorted.empty())
    return 0;
  return sorted[std::min(sorted.size() - 1, size_t(p * double(sorted.size())))];
}

std::vector<int> intList(const char *text) {
  std::vector<int> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    out.push_back(std::atoi(item.c_str()));
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: serve model.cgc [--contexts N] [--clients 1,4,16] "
                         "[--seconds S] [--cancel-every K]\n");
    return 2;
  }
  int contexts = 4, cancelEvery = 10;
  double seconds = 2;
  std::vector<int> clientCounts{1, 4, 16};
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--contexts"))
      contexts = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--clients"))
      clientCounts = intList(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seconds"))
      seconds = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cancel-every"))
      cancelEvery = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "serve: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  cgc::Engine engine;
  if (cgc::Status s = cgc::Engine::loadFile(argv[1], engine); !s) {
    std::fprintf(stderr, "serve: %s: %s\n", argv[1], s.message.c_str());
    return 1;
  }
  Signature sig = signatureOf(engine);
  std::vector<std::vector<Bytes>> sets = inputSets(sig, 16);
  std::vector<Result> expected;
  {
    Server reference(engine, sig, 1);
    for (const auto &set : sets) {
      std::shared_ptr<Request> r = reference.submit(set);
      if (r->ended.get_future().get() != Request::End::Done) {
        std::fprintf(stderr, "serve: the reference run failed: %s\n", r->error.c_str());
        return 1;
      }
      expected.push_back(r->outputs);
    }
  }
  std::printf("| contexts | clients | requests/s | p50 us | p90 us | p99 us | cancelled | "
              "wrong |\n|---|---|---|---|---|---|---|---|\n");
  bool ok = true;
  std::vector<double> single, pooled; // requests/s per client count
  for (int pool : {1, contexts}) {
    for (int clients : clientCounts) {
      Server server(engine, sig, pool);
      load(server, sets, expected, clients, 0.2, 0); // warm-up
      Load r = load(server, sets, expected, clients, seconds, cancelEvery);
      std::printf("| %d | %d | %.0f | %.1f | %.1f | %.1f | %lld | %lld |\n", pool, clients,
                  double(r.latenciesUs.size()) / r.seconds, percentile(r.latenciesUs, 0.5),
                  percentile(r.latenciesUs, 0.9), percentile(r.latenciesUs, 0.99),
                  (long long)r.cancelled, (long long)r.wrong);
      ok = ok && r.wrong == 0 && r.failed == 0;
      (pool == 1 ? single : pooled).push_back(double(r.latenciesUs.size()) / r.seconds);
    }
    if (contexts == 1)
      break;
  }
  for (size_t k = 0; k < pooled.size(); ++k)
    std::printf("%d clients: %d contexts serve %.2fx the requests of one\n", clientCounts[k],
                contexts, pooled[k] / single[k]);
  // Shutdown with requests queued: each completes (done or cancelled).
  {
    Server server(engine, sig, contexts);
    std::vector<std::shared_ptr<Request>> burst;
    for (int k = 0; k < 256; ++k)
      burst.push_back(server.submit(sets[size_t(k) % sets.size()]));
    server.shutdown();
    int64_t done = 0, cancelled = 0;
    for (size_t k = 0; k < burst.size(); ++k) {
      Request::End how = burst[k]->ended.get_future().get();
      if (how == Request::End::Done && burst[k]->outputs == expected[k % sets.size()])
        ++done;
      else if (how == Request::End::Cancelled)
        ++cancelled;
      else
        ok = false;
    }
    std::printf("shutdown with 256 queued: %lld done, %lld cancelled\n", (long long)done,
                (long long)cancelled);
  }
  std::printf("serve: %s\n", ok ? "PASS" : "FAIL (a wrong or failed request)");
  return ok ? 0 : 1;
}
