//===- Ranks.h - An engine joined to the ranks of a data-parallel run -*- C++ -*-===//
//
// Internal to the runtime. cgc_engine_join gives an engine whose artifact
// has collectives its Ranks: the NCCL communicator its collective nodes
// run on, and a watchdog thread that aborts that communicator when NCCL
// reports an asynchronous error or when the replay in flight is older
// than the timeout (a peer died or stalled), after which every run of the
// engine fails with CGC_ERROR_COLLECTIVE and the failure's message.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_RANKS_H
#define CGC_RUNTIME_RANKS_H

#include "Driver.h"
#include "Nccl.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

struct cgc_engine_s;

namespace cgc {
namespace rt {

struct Ranks {
  const Nccl *nccl = nullptr;
  ncclComm_t comm = nullptr;
  bool ownsComm = false;
  int rank = 0, world = 1;
  std::chrono::milliseconds timeout{600000};

  /// Set once by the watchdog; then failure holds why (under mutex).
  std::atomic<bool> failed{false};
  std::string failure;

  /// The last replay's completion event and when it was launched.
  CUevent lastReplay = nullptr;
  std::chrono::steady_clock::time_point launched;
  bool inFlight = false;

  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread watchdog;

  /// Stops the watchdog; destroys the communicator when the engine made
  /// it and it was not aborted.
  void release(const Driver &drv);
};

/// Fails with CGC_ERROR_COLLECTIVE once the watchdog has aborted the
/// engine's communicator; CGC_OK for an engine without ranks.
cgc_status checkRanks(const cgc_engine_s &e);
/// After a launch on \p stream: records the replay's completion, which
/// the watchdog ages (engines with ranks only).
cgc_status noteLaunch(cgc_engine_s &e, CUstream stream);
/// Context creation refuses an engine with collectives that has not
/// joined its ranks.
cgc_status requireRanks(const cgc_engine_s &e);

} // namespace rt
} // namespace cgc

#endif // CGC_RUNTIME_RANKS_H
