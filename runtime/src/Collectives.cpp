//===- Collectives.cpp - Joining an engine to its ranks; the watchdog -----===//
//
// cgc_engine_join (collective over the ranks): load NCCL, take the
// caller's communicator or make one from the unique id, check its rank and
// size, all-gather every rank's artifact checksum and refuse a mismatch,
// broadcast rank 0's persistent region (parameters, optimizer and RNG
// state) in place, then start the watchdog. Everything runs on one
// stream of the engine made for the join and waits for it: joining is
// set-up, not replay.
//
// The watchdog wakes every 100 ms (or when told to stop): it asks NCCL for
// the communicator's asynchronous error and, when a replay is in flight,
// whether its completion event has fired; an error, a failed replay, or a
// replay older than the timeout, aborts the communicator (its kernels
// waiting on a peer then return) and records why, under the lock that
// every issue of work on the communicator holds (issueJoined): nothing is
// issued on an aborted communicator. cgc_run takes that lock (uncontended
// but for the watchdog's look every 100 ms), launches, and records one
// event. The join's own waits are bounded by the timeout too; the
// ncclCommInitRank it starts with is not (NCCL's blocking init).
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "Ranks.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace cgc::rt;

namespace {

constexpr std::chrono::milliseconds kPollInterval{100};

cgc_status failNccl(const Nccl &nccl, const char *api, ncclResult_t r,
                    ncclComm_t comm) {
  return fail(CGC_ERROR_COLLECTIVE, nccl.errorText(api, r, comm));
}

#define CGC_CHECK_NCCL(nccl, comm, call)                                       \
  do {                                                                         \
    ncclResult_t cgcR = (nccl).call;                                           \
    if (cgcR != ncclSuccess)                                                   \
      return failNccl((nccl), #call, cgcR, (comm));                            \
  } while (0)

/// Records \p why as the engine's failure, under the lock (nothing is
/// issued after it), then aborts the communicator: its kernels waiting on
/// a peer return. A communicator the caller gave is aborted too: the
/// caller must not destroy it afterwards.
void abortRanks(Ranks &r, const std::string &why) {
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.failure = "rank " + std::to_string(r.rank) + " of " +
                std::to_string(r.world) + ": " + why +
                "; the communicator is aborted (a replay in flight ends with "
                "undefined gradients)";
    r.failed = true;
  }
  r.nccl->ncclCommAbort(r.comm);
}

/// One look: NCCL's asynchronous error, then the replay in flight (an
/// error of its own, or its age). True when it aborted.
bool inspect(const cgc_engine_s &e, Ranks &r) {
  ncclResult_t async = ncclSuccess;
  ncclResult_t q = r.nccl->ncclCommGetAsyncError(r.comm, &async);
  if (q != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
    abortRanks(r, "NCCL reports " +
                      r.nccl->errorText("the communicator", q != ncclSuccess ? q : async,
                                        r.comm));
    return true;
  }
  std::chrono::steady_clock::time_point launched;
  CUresult done = CUDA_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.inFlight)
      return false;
    done = e.drv->cuEventQuery(r.lastReplay);
    r.inFlight = done == CUDA_ERROR_NOT_READY;
    launched = r.launched;
  }
  if (done != CUDA_SUCCESS && done != CUDA_ERROR_NOT_READY) {
    const char *name = nullptr;
    e.drv->cuGetErrorName(done, &name);
    abortRanks(r, std::string("the replay failed on the device (") + (name ? name : "?") + ")");
    return true;
  }
  auto age = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - launched);
  if (done == CUDA_SUCCESS || age < r.timeout)
    return false;
  abortRanks(r, "a replay has not finished after " +
                    std::to_string(age.count()) + " ms (timeout " +
                    std::to_string(r.timeout.count()) +
                    " ms): a peer rank died or stalled");
  return true;
}

void watch(const cgc_engine_s *e, Ranks *r) {
  e->drv->cuCtxSetCurrent(e->cuContext);
  std::unique_lock<std::mutex> lock(r->mutex);
  while (!r->stopping) {
    r->wake.wait_for(lock, kPollInterval);
    if (r->stopping)
      break;
    lock.unlock();
    bool aborted = inspect(*e, *r);
    lock.lock();
    if (aborted)
      break;
  }
}

/// The communicator: the caller's, or one made from the unique id.
cgc_status communicator(const cgc_ranks &in, Ranks &r) {
  if (in.nccl_comm) {
    r.comm = static_cast<ncclComm_t>(in.nccl_comm);
  } else {
    if (!in.unique_id)
      return fail(CGC_ERROR_INVALID_ARGUMENT,
                  "cgc_engine_join: give nccl_comm or unique_id");
    if (in.world_size < 1 || in.rank < 0 || in.rank >= in.world_size)
      return fail(CGC_ERROR_INVALID_ARGUMENT,
                  "cgc_engine_join: rank " + std::to_string(in.rank) +
                      " is outside a world of " + std::to_string(in.world_size));
    ncclUniqueId id;
    static_assert(sizeof id == CGC_NCCL_UNIQUE_ID_BYTES, "NCCL's unique id size");
    std::memcpy(&id, in.unique_id, sizeof id);
    // NVLink multicast (NVLS) stays off unless the launcher chose otherwise.
    setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
    CGC_CHECK_NCCL(*r.nccl, nullptr,
                   ncclCommInitRank(&r.comm, in.world_size, id, in.rank));
    r.ownsComm = true;
  }
  CGC_CHECK_NCCL(*r.nccl, r.comm, ncclCommCount(r.comm, &r.world));
  CGC_CHECK_NCCL(*r.nccl, r.comm, ncclCommUserRank(r.comm, &r.rank));
  if (in.nccl_comm && in.world_size && (in.world_size != r.world || in.rank != r.rank))
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "cgc_engine_join: the communicator is rank " +
                    std::to_string(r.rank) + " of " + std::to_string(r.world) +
                    ", not rank " + std::to_string(in.rank) + " of " +
                    std::to_string(in.world_size));
  return CGC_OK;
}

/// Waits for \p stream at most the join's timeout: a peer that never
/// arrives fails the join instead of hanging it.
cgc_status waitForRanks(const Driver &drv, const Ranks &r, CUstream stream,
                        const char *what) {
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    CUresult q = drv.cuStreamQuery(stream);
    if (q == CUDA_SUCCESS)
      return CGC_OK;
    if (q != CUDA_ERROR_NOT_READY)
      return failDriver(drv, what, q);
    if (std::chrono::steady_clock::now() - start > r.timeout)
      return fail(CGC_ERROR_COLLECTIVE,
                  std::string("cgc_engine_join: ") + what + " did not finish within " +
                      std::to_string(r.timeout.count()) +
                      " ms: a rank did not join (or died)");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// All-gathers each rank's artifact checksum; refuses a rank whose differs.
cgc_status agreeOnArtifact(const cgc_engine_s &e, Ranks &r, CUstream stream,
                           CUdeviceptr scratch) {
  const Driver &drv = *e.drv;
  uint64_t mine = e.artifact.header.checksum;
  CUdeviceptr slot = scratch + sizeof(uint64_t) * uint64_t(r.rank);
  CGC_CHECK_CU(drv, cuMemcpyHtoDAsync(slot, &mine, sizeof mine, stream));
  CGC_CHECK_NCCL(*r.nccl, r.comm,
                 ncclAllGather(reinterpret_cast<void *>(slot),
                               reinterpret_cast<void *>(scratch), 1, ncclUint64,
                               r.comm, stream));
  if (cgc_status s = waitForRanks(drv, r, stream, "the artifact check"))
    return s;
  std::vector<uint64_t> all(size_t(r.world));
  CGC_CHECK_CU(drv, cuMemcpyDtoH(all.data(), scratch, all.size() * sizeof(uint64_t)));
  for (int k = 0; k < r.world; ++k)
    if (all[size_t(k)] != mine) {
      char text[80];
      std::snprintf(text, sizeof text, "%016llx, rank %d's %016llx",
                    static_cast<unsigned long long>(mine), k,
                    static_cast<unsigned long long>(all[size_t(k)]));
      return fail(CGC_ERROR_COLLECTIVE,
                  "cgc_engine_join: the ranks loaded different artifacts "
                  "(rank " + std::to_string(r.rank) + "'s checksum " + text + ")");
    }
  return CGC_OK;
}

/// Checks the artifact across the ranks and starts them equal.
cgc_status synchronizeRanks(cgc_engine_s &e, Ranks &r) {
  const Driver &drv = *e.drv;
  CUstream stream = nullptr;
  CUdeviceptr scratch = 0;
  // The state's upload (on the legacy stream) lands before its broadcast.
  CGC_CHECK_CU(drv, cuCtxSynchronize());
  CGC_CHECK_CU(drv, cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUresult a = drv.cuMemAlloc(&scratch, sizeof(uint64_t) * size_t(r.world));
  cgc_status s = a != CUDA_SUCCESS ? failDriver(drv, "cuMemAlloc", a)
                                   : agreeOnArtifact(e, r, stream, scratch);
  uint64_t bytes = e.artifact.manifest.persistentSize;
  if (s == CGC_OK && bytes) {
    ncclResult_t b = r.nccl->ncclBroadcast(
        reinterpret_cast<void *>(e.persistent), reinterpret_cast<void *>(e.persistent),
        bytes, ncclUint8, 0, r.comm, stream);
    s = b != ncclSuccess ? failNccl(*r.nccl, "ncclBroadcast", b, r.comm)
                         : waitForRanks(drv, r, stream, "the state broadcast");
  }
  if (scratch)
    drv.cuMemFree(scratch);
  drv.cuStreamDestroy(stream);
  return s;
}

} // namespace

namespace cgc {
namespace rt {

void Ranks::release(const Driver &drv) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  if (watchdog.joinable())
    watchdog.join();
  if (ownsComm && comm && !failed) {
    ncclResult_t async = ncclSuccess;
    bool pending = inFlight && lastReplay &&
                   drv.cuEventQuery(lastReplay) == CUDA_ERROR_NOT_READY;
    nccl->ncclCommGetAsyncError(comm, &async);
    if (pending || (async != ncclSuccess && async != ncclInProgress))
      nccl->ncclCommAbort(comm);
    else
      nccl->ncclCommDestroy(comm);
  }
  if (lastReplay)
    drv.cuEventDestroy(lastReplay);
}

cgc_status abortedError(const Ranks &r) {
  return fail(CGC_ERROR_COLLECTIVE, r.failure);
}

cgc_status recordReplay(cgc_engine_s &e, CUstream stream) {
  if (!e.ranks)
    return CGC_OK;
  Ranks &r = *e.ranks;
  CGC_CHECK_CU(*e.drv, cuEventRecord(r.lastReplay, stream));
  r.launched = std::chrono::steady_clock::now();
  r.inFlight = true;
  return CGC_OK;
}

cgc_status requireRanks(const cgc_engine_s &e) {
  size_t n = e.artifact.manifest.collectives.size();
  if (n && !e.ranks)
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "the artifact has " + std::to_string(n) +
                    " collectives (a data-parallel training step): join the "
                    "engine to its ranks (cgc_engine_join) before creating a "
                    "context");
  if (e.ranks && e.contexts.load() > 1)
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "a joined engine runs one context: the collectives of two "
                "would reach the communicator in no fixed order");
  return CGC_OK;
}

} // namespace rt
} // namespace cgc

extern "C" {

cgc_status cgc_engine_collectives(cgc_engine engine, size_t *count) {
  if (!engine || !count)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  *count = engine->artifact.manifest.collectives.size();
  return CGC_OK;
}

cgc_status cgc_nccl_unique_id(void *out, size_t size) {
  if (!out || size < CGC_NCCL_UNIQUE_ID_BYTES)
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "cgc_nccl_unique_id needs " +
                    std::to_string(CGC_NCCL_UNIQUE_ID_BYTES) + " bytes");
  std::string reason;
  const Nccl *nccl = getNccl(reason);
  if (!nccl)
    return fail(CGC_ERROR_UNSUPPORTED, "NCCL: " + reason);
  ncclUniqueId id;
  CGC_CHECK_NCCL(*nccl, nullptr, ncclGetUniqueId(&id));
  std::memcpy(out, &id, sizeof id);
  return CGC_OK;
}

cgc_status cgc_engine_join(cgc_engine engine, const cgc_ranks *ranks) {
  if (!engine || !ranks)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  if (engine->artifact.manifest.collectives.empty())
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "cgc_engine_join: the artifact has no collectives (compile "
                "with cgc --train --data-parallel)");
  if (engine->ranks)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "cgc_engine_join: joined already");
  if (engine->contexts.load())
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "cgc_engine_join: join before creating contexts");
  std::string reason;
  auto r = std::make_unique<Ranks>();
  r->nccl = getNccl(reason);
  if (!r->nccl)
    return fail(CGC_ERROR_UNSUPPORTED, "NCCL: " + reason);
  if (ranks->timeout_ms)
    r->timeout = std::chrono::milliseconds(ranks->timeout_ms);
  if (cgc_status s = engine->makeCurrent())
    return s;
  cgc_status s = communicator(*ranks, *r);
  if (s == CGC_OK)
    s = synchronizeRanks(*engine, *r);
  if (s == CGC_OK &&
      engine->drv->cuEventCreate(&r->lastReplay, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
    s = fail(CGC_ERROR_DRIVER, "cgc_engine_join: cuEventCreate failed");
  if (s != CGC_OK) {
    // A peer may never come: abort (a destroy would wait for it).
    std::string why = cgc_last_error();
    if (r->comm && r->ownsComm)
      r->nccl->ncclCommAbort(r->comm);
    r->failed = true;
    r->release(*engine->drv);
    return fail(s, why);
  }
  Ranks *raw = r.get();
  raw->watchdog = std::thread(watch, engine, raw);
  engine->ranks = std::move(r);
  return CGC_OK;
}

} // extern "C"
