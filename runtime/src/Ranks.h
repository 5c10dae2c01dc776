//===- Ranks.h - An engine joined to the ranks of a data-parallel run -*- C++ -*-===//
//
// Internal to the runtime. cgc_engine_join gives an engine whose artifact
// has collectives its Ranks: the NCCL communicator its collective nodes
// run on, and a watchdog thread that aborts that communicator when NCCL
// reports an asynchronous error or when the replay in flight is older
// than the timeout (a peer died or stalled), after which every run of the
// engine fails with CGC_ERROR_COLLECTIVE and the failure's message.
// Everything that issues work on the communicator does it through
// issueJoined, under the same lock as the watchdog's decision.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_RANKS_H
#define CGC_RUNTIME_RANKS_H

#include "Internal.h"
#include "Nccl.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace cgc {
namespace rt {

struct Ranks {
  const Nccl *nccl = nullptr;
  ncclComm_t comm = nullptr;
  bool ownsComm = false;
  int rank = 0, world = 1;
  std::chrono::milliseconds timeout{600000};

  /// Under mutex: whether the watchdog aborted the communicator, and why.
  bool failed = false;
  std::string failure;

  /// Under mutex: the last replay's completion event and its launch time.
  CUevent lastReplay = nullptr;
  std::chrono::steady_clock::time_point launched;
  bool inFlight = false;

  /// Held by whatever issues work on the communicator (a graph launch, an
  /// eager NCCL call, a capture) and by the watchdog's decision to abort,
  /// so that nothing is issued on an aborted communicator.
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread watchdog;

  /// Stops the watchdog; ends a communicator the engine made: destroyed
  /// when healthy and idle, else aborted (a destroy would wait for a
  /// peer that may never come).
  void release(const Driver &drv);
};

/// The error of an aborted communicator (the caller holds r.mutex).
cgc_status abortedError(const Ranks &r);

/// Runs \p issue, work that uses the communicator, under the ranks' lock
/// unless the watchdog has aborted it (CGC_ERROR_COLLECTIVE and why); for
/// an engine without ranks, just runs it.
template <class Issue> cgc_status issueJoined(cgc_engine_s &e, Issue issue) {
  if (!e.ranks)
    return issue();
  std::lock_guard<std::mutex> lock(e.ranks->mutex);
  if (e.ranks->failed)
    return abortedError(*e.ranks);
  return issue();
}

/// Records the completion of the replay just issued on \p stream, which
/// the watchdog ages (inside issueJoined; nothing without ranks).
cgc_status recordReplay(cgc_engine_s &e, CUstream stream);
/// Context creation refuses an engine with collectives that has not
/// joined its ranks, and a second context of a joined engine (its graphs
/// would issue collectives on one communicator in no fixed order).
cgc_status requireRanks(const cgc_engine_s &e);

} // namespace rt
} // namespace cgc

#endif // CGC_RUNTIME_RANKS_H
