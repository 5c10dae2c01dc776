//===- StubNccl.cpp - NCCL without a GPU, ranks as threads, for the tests --===//
//
// libnccl.so.2 for the runtime's data-parallel host paths on a machine
// without GPUs (check-tsan.sh loads it through CGC_NCCL_LIBRARY, beside
// the stub driver, whose "device" memory is host memory). The ranks of a
// communicator are threads of one process that met in ncclCommInitRank
// under one unique id. ncclAllGather and ncclBroadcast run at once, as a
// rendezvous of every rank (what cgc_engine_join needs); ncclAllReduce and
// the group calls succeed and do nothing (the stub driver executes no
// graph either). cgc_stub_nccl_fail(rank) makes that rank's
// ncclCommGetAsyncError report a remote error, as a dead peer does.
//
//===----------------------------------------------------------------------===//
#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#define STUB_API extern "C" __attribute__((visibility("default")))

namespace {

/// The ranks that share one unique id.
struct Clique {
  explicit Clique(int world) : world(world), slots(size_t(world)) {}
  const int world;
  std::mutex mutex;
  std::condition_variable changed;
  int joined = 0, arrived = 0, left = 0;
  uint64_t round = 0;
  std::vector<const void *> slots;
  std::atomic<bool> failed[64] = {};

  /// Every rank deposits \p mine and, once all have, runs \p take over
  /// every rank's deposit (in rank order); no rank returns (freeing its
  /// deposit) before every rank has taken.
  template <class Take> void meet(int rank, const void *mine, Take take) {
    std::unique_lock<std::mutex> lock(mutex);
    uint64_t at = round;
    slots[size_t(rank)] = mine;
    if (++arrived == world) {
      ++round;
      changed.notify_all();
    } else {
      changed.wait(lock, [&] { return round != at; });
    }
    take(slots);
    if (++left == world) {
      arrived = left = 0;
      ++round;
      changed.notify_all();
    } else {
      changed.wait(lock, [&] { return round != at + 1; });
    }
  }
};

std::mutex gCliquesMutex;
std::map<std::string, std::shared_ptr<Clique>> gCliques;
std::atomic<uint64_t> gIds{0};

} // namespace

struct ncclComm {
  std::shared_ptr<Clique> clique;
  int rank = 0;
  std::atomic<bool> aborted{false};
};

STUB_API ncclResult_t ncclGetVersion(int *v) { *v = 22800; return ncclSuccess; }
STUB_API const char *ncclGetErrorString(ncclResult_t r) {
  return r == ncclRemoteError ? "remote process exited or there was a network error"
                              : "stub NCCL error";
}
STUB_API const char *ncclGetLastError(ncclComm_t) { return "the stub NCCL"; }

STUB_API ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  std::memset(id, 0, sizeof *id);
  std::string text = "stub-" + std::to_string(++gIds);
  std::memcpy(id->internal, text.c_str(), text.size());
  return ncclSuccess;
}

STUB_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int world, ncclUniqueId id,
                                       int rank) {
  if (world < 1 || world > 64 || rank < 0 || rank >= world)
    return ncclInvalidArgument;
  std::shared_ptr<Clique> clique;
  {
    std::lock_guard<std::mutex> lock(gCliquesMutex);
    std::shared_ptr<Clique> &slot = gCliques[std::string(id.internal)];
    if (!slot)
      slot = std::make_shared<Clique>(world);
    clique = slot;
  }
  if (clique->world != world)
    return ncclInvalidArgument;
  auto *c = new ncclComm;
  c->clique = clique;
  c->rank = rank;
  clique->meet(rank, nullptr, [](const std::vector<const void *> &) {});
  *comm = c;
  return ncclSuccess;
}

STUB_API ncclResult_t ncclCommDestroy(ncclComm_t comm) { delete comm; return ncclSuccess; }
STUB_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  comm->aborted = true;
  return ncclSuccess;
}
STUB_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async) {
  *async = comm->clique->failed[comm->rank] ? ncclRemoteError : ncclSuccess;
  return ncclSuccess;
}
STUB_API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  *count = comm->clique->world;
  return ncclSuccess;
}
STUB_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  *rank = comm->rank;
  return ncclSuccess;
}
STUB_API ncclResult_t ncclGroupStart() { return ncclSuccess; }
STUB_API ncclResult_t ncclGroupEnd() { return ncclSuccess; }

STUB_API ncclResult_t ncclAllReduce(const void *, void *, size_t, ncclDataType_t,
                                    ncclRedOp_t, ncclComm_t comm, cudaStream_t) {
  return comm->aborted ? ncclInvalidUsage : ncclSuccess;
}

static size_t typeSize(ncclDataType_t t) {
  switch (t) {
  case ncclInt8: case ncclUint8: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  default: return 8;
  }
}

STUB_API ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                                    ncclDataType_t type, ncclComm_t comm, cudaStream_t) {
  size_t bytes = count * typeSize(type);
  // Staged: send may lie inside recv (in place).
  std::vector<char> mine(static_cast<const char *>(send),
                         static_cast<const char *>(send) + bytes);
  comm->clique->meet(comm->rank, mine.data(), [&](const std::vector<const void *> &slots) {
    for (size_t r = 0; r < slots.size(); ++r)
      std::memcpy(static_cast<char *>(recv) + r * bytes, slots[r], bytes);
  });
  return ncclSuccess;
}

STUB_API ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count,
                                    ncclDataType_t type, int root, ncclComm_t comm,
                                    cudaStream_t) {
  size_t bytes = count * typeSize(type);
  std::vector<char> mine;
  if (comm->rank == root)
    mine.assign(static_cast<const char *>(send), static_cast<const char *>(send) + bytes);
  comm->clique->meet(comm->rank, mine.data(), [&](const std::vector<const void *> &slots) {
    if (comm->rank != root)
      std::memcpy(recv, slots[size_t(root)], bytes);
  });
  return ncclSuccess;
}

/// Test hook: \p rank's communicators report a remote error from now on.
STUB_API void cgc_stub_nccl_fail(int rank) {
  std::lock_guard<std::mutex> lock(gCliquesMutex);
  for (auto &[id, clique] : gCliques)
    clique->failed[rank] = true;
}
