//===- DistributedThreads.cpp - Joining ranks, and their failures, on stubs --===//
//
// The runtime's data-parallel host paths without GPUs, under
// ThreadSanitizer: the stub driver (StubDriver.cpp) and the stub NCCL
// (StubNccl.cpp, whose ranks are threads), two ranks as two threads of
// this process. Checked, each an exit status 1 when it goes otherwise:
//   - a context of an engine with collectives is refused before joining,
//     and an artifact without collectives cannot join;
//   - two ranks join: rank 1's parameters, zeroed before joining, equal
//     rank 0's after (the broadcast); both replay 50 steps and eagerly; a
//     second context of a joined engine is refused;
//   - a rank whose peer dies (the stub's asynchronous error) fails its
//     next run with CGC_ERROR_COLLECTIVE within the watchdog's poll;
//   - a replay that never finishes (the stub driver's pending events)
//     fails the next run once the join's timeout has passed;
//   - ranks that loaded different artifacts fail to join, both naming the
//     checksums.
//
//   distributed_threads step.cgc other-step.cgc plain.cgc
//
//===----------------------------------------------------------------------===//
#include "cgc/cgc_runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<int> gFailures{0};

void expect(bool ok, const std::string &what) {
  if (ok)
    return;
  std::fprintf(stderr, "distributed_threads: %s (last error: %s)\n", what.c_str(),
               cgc_last_error());
  ++gFailures;
}

bool ok(cgc_status s, const std::string &what) {
  expect(s == CGC_OK, what + ": " + cgc_status_message(s));
  return s == CGC_OK;
}

/// A function the stub libraries export for the tests.
template <class F> F stubHook(const char *library, const char *name) {
  void *lib = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
}

/// The first parameter tensor of \p engine and its bytes.
std::string firstParameter(cgc_engine engine, size_t &bytes) {
  for (size_t i = 0; i < cgc_engine_num_tensors(engine, CGC_ROLE_STATE); ++i) {
    cgc_tensor_info info;
    cgc_engine_tensor_info(engine, CGC_ROLE_STATE, i, &info);
    if (std::strcmp(info.kind, "parameter") == 0) {
      bytes = info.bytes;
      return info.name;
    }
  }
  return "";
}

struct Rank {
  int rank;
  cgc_engine engine = nullptr;
  cgc_context ctx = nullptr;
  cgc_status joined = CGC_OK;
  std::string joinError;
};

/// Loads \p path, zeroes the first parameter on rank 1, joins.
void join(Rank &r, const char *path, const unsigned char *id, uint32_t timeoutMs) {
  if (!ok(cgc_engine_load_file(path, 0, &r.engine), "load " + std::string(path)))
    return;
  if (r.rank == 1) {
    size_t bytes = 0;
    std::string name = firstParameter(r.engine, bytes);
    std::vector<unsigned char> zeros(bytes, 0);
    ok(cgc_engine_state_write(r.engine, name.c_str(), zeros.data(), bytes), "zero rank 1");
  }
  cgc_ranks ranks = {nullptr, id, r.rank, 2, timeoutMs};
  r.joined = cgc_engine_join(r.engine, &ranks);
  if (r.joined != CGC_OK)
    r.joinError = cgc_last_error();
}

/// Two ranks join \p paths[rank] at once.
std::vector<Rank> joinTwo(const char *path0, const char *path1, uint32_t timeoutMs) {
  unsigned char id[CGC_NCCL_UNIQUE_ID_BYTES];
  ok(cgc_nccl_unique_id(id, sizeof id), "unique id");
  std::vector<Rank> ranks = {{0}, {1}};
  std::thread a(join, std::ref(ranks[0]), path0, id, timeoutMs);
  std::thread b(join, std::ref(ranks[1]), path1, id, timeoutMs);
  a.join();
  b.join();
  return ranks;
}

void destroy(std::vector<Rank> &ranks) {
  for (Rank &r : ranks) {
    cgc_context_destroy(r.ctx);
    cgc_engine_destroy(r.engine);
  }
}

void refusals(const char *step, const char *plain) {
  cgc_engine engine = nullptr;
  cgc_context ctx = nullptr;
  if (ok(cgc_engine_load_file(step, 0, &engine), "load step")) {
    size_t n = 0;
    ok(cgc_engine_collectives(engine, &n), "collectives");
    expect(n > 0, "the step has collectives");
    expect(cgc_context_create(engine, nullptr, 0, &ctx) == CGC_ERROR_INVALID_ARGUMENT &&
               std::strstr(cgc_last_error(), "cgc_engine_join"),
           "a context before joining is refused");
    cgc_engine_destroy(engine);
  }
  if (ok(cgc_engine_load_file(plain, 0, &engine), "load plain")) {
    cgc_ranks ranks = {nullptr, nullptr, 0, 1, 0};
    expect(cgc_engine_join(engine, &ranks) == CGC_ERROR_INVALID_ARGUMENT &&
               std::strstr(cgc_last_error(), "no collectives"),
           "an artifact without collectives cannot join");
    cgc_engine_destroy(engine);
  }
}

void steps(Rank &r) {
  if (!ok(cgc_context_create(r.engine, nullptr, 0, &r.ctx), "context"))
    return;
  for (int k = 0; k < 50; ++k)
    ok(k % 10 == 9 ? cgc_run_eager(r.ctx, 0, nullptr, 0, nullptr)
                   : cgc_run(r.ctx, 0, nullptr, 0, nullptr),
       "step");
}

void trainAndLosePeer(const char *step) {
  std::vector<Rank> ranks = joinTwo(step, step, 0);
  for (Rank &r : ranks)
    expect(r.joined == CGC_OK, "rank " + std::to_string(r.rank) + " joins: " + r.joinError);
  if (gFailures)
    return destroy(ranks);
  size_t bytes = 0;
  std::string name = firstParameter(ranks[0].engine, bytes);
  std::vector<unsigned char> p0(bytes), p1(bytes);
  ok(cgc_engine_state_read(ranks[0].engine, name.c_str(), p0.data(), bytes), "read 0");
  ok(cgc_engine_state_read(ranks[1].engine, name.c_str(), p1.data(), bytes), "read 1");
  expect(p0 == p1 && std::any_of(p1.begin(), p1.end(), [](unsigned char c) { return c; }),
         "rank 1 starts from rank 0's parameters");
  std::thread a(steps, std::ref(ranks[0])), b(steps, std::ref(ranks[1]));
  a.join();
  b.join();
  cgc_context second = nullptr;
  expect(cgc_context_create(ranks[0].engine, nullptr, 0, &second) ==
                 CGC_ERROR_INVALID_ARGUMENT &&
             std::strstr(cgc_last_error(), "one context"),
         "a second context of a joined engine is refused");
  auto fail = stubHook<void (*)(int)>("libnccl.so.2", "cgc_stub_nccl_fail");
  expect(fail != nullptr, "the stub NCCL is loaded");
  if (fail) {
    fail(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    cgc_status s = cgc_run(ranks[1].ctx, 0, nullptr, 0, nullptr);
    expect(s == CGC_ERROR_COLLECTIVE && std::strstr(cgc_last_error(), "NCCL reports"),
           "a dead peer fails the next run");
    expect(cgc_run_eager(ranks[1].ctx, 0, nullptr, 0, nullptr) == CGC_ERROR_COLLECTIVE,
           "and every run after it");
  }
  destroy(ranks);
}

void stall(const char *step) {
  std::vector<Rank> ranks = joinTwo(step, step, /*timeoutMs=*/200);
  for (Rank &r : ranks)
    expect(r.joined == CGC_OK, "rank " + std::to_string(r.rank) + " joins: " + r.joinError);
  auto pending = stubHook<void (*)(int)>("libcuda.so.1", "cgc_stub_events_pending");
  expect(pending != nullptr, "the stub driver is loaded");
  if (!gFailures && pending &&
      ok(cgc_context_create(ranks[0].engine, nullptr, 0, &ranks[0].ctx), "context")) {
    pending(1);
    ok(cgc_run(ranks[0].ctx, 0, nullptr, 0, nullptr), "the stalled step launches");
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    cgc_status s = cgc_run(ranks[0].ctx, 0, nullptr, 0, nullptr);
    expect(s == CGC_ERROR_COLLECTIVE && std::strstr(cgc_last_error(), "has not finished"),
           "a stalled replay fails the next run after the timeout");
    pending(0);
  }
  destroy(ranks);
}

void differentArtifacts(const char *step, const char *other) {
  std::vector<Rank> ranks = joinTwo(step, other, 0);
  for (Rank &r : ranks)
    expect(r.joined == CGC_ERROR_COLLECTIVE &&
               r.joinError.find("the ranks loaded different artifacts") != std::string::npos,
           "rank " + std::to_string(r.rank) + " refuses another artifact: " + r.joinError);
  destroy(ranks);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: distributed_threads step.cgc other-step.cgc plain.cgc\n");
    return 2;
  }
  refusals(argv[1], argv[3]);
  trainAndLosePeer(argv[1]);
  stall(argv[1]);
  differentArtifacts(argv[1], argv[2]);
  std::printf("distributed_threads: join, 2 ranks x 50 steps, a dead peer, a stalled "
              "replay, different artifacts: %d failures\n",
              gFailures.load());
  return gFailures == 0 ? 0 : 1;
}
