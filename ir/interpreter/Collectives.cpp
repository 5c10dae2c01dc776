//===- Collectives.cpp - all_reduce, and ranks as threads --------------------===//
//
// all_reduce replaces each operand by its sum over the ranks (in rank
// order, in double), divided by the world size for "mean", rounded once to
// the operand's dtype. ThreadRanks runs the ranks as threads: every rank
// deposits its operands, the last to arrive adds them up, and each takes
// the sums; a second phase lets every rank copy before the next round.
//
//===----------------------------------------------------------------------===//
#include "ir/OpAttrs.h"
#include "ir/interpreter/Interpreter.h"
#include "ir/interpreter/Kernels.h"

#include <condition_variable>
#include <mutex>

using namespace cgc;
using namespace cgc::interp;

std::vector<Tensor> interp::evalCollective(const Node &node, const Operands &in,
                                           Collectives *ranks) {
  std::vector<Tensor> values;
  for (const Tensor *x : in)
    values.push_back(*x);
  if (!ranks)
    return values; // One rank: the sum and the mean are the operand.
  std::string error;
  if (!ranks->sumOverRanks(values, error))
    fail(error);
  double world = ranks->worldSize();
  bool mean = allReduceAverages(node);
  for (Tensor &t : values)
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setReal(i, mean ? t.real(i) / world : t.real(i));
  return values;
}

struct ThreadRanks::Shared {
  explicit Shared(int world) : world(world), deposits(size_t(world)) {}
  const int world;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::vector<Tensor> *> deposits;
  std::vector<Tensor> sums;
  int arrived = 0, taken = 0;
  uint64_t round = 0;
  bool abandoned = false;
  std::string disagreement;

  /// Sums the deposits in rank order; records why when the ranks' operands
  /// differ in count, dtype or shape.
  void addUp() {
    sums = *deposits[0];
    for (int r = 1; r < world; ++r) {
      const std::vector<Tensor> &other = *deposits[size_t(r)];
      if (other.size() != sums.size()) {
        disagreement = "rank " + std::to_string(r) + " reduces " +
                       std::to_string(other.size()) + " tensors, rank 0 " +
                       std::to_string(sums.size());
        return;
      }
      for (size_t i = 0; i < sums.size(); ++i) {
        if (other[i].dtype != sums[i].dtype || other[i].shape != sums[i].shape) {
          disagreement = "operand #" + std::to_string(i) + " is " +
                         other[i].typeString() + " on rank " +
                         std::to_string(r) + " but " + sums[i].typeString() +
                         " on rank 0";
          return;
        }
        for (int64_t e = 0; e < sums[i].numel(); ++e)
          sums[i].data[size_t(e)] =
              Element::ofReal(sums[i].real(e) + other[i].real(e));
      }
    }
  }
};

class ThreadRanks::Rank : public Collectives {
public:
  Rank(Shared &shared, int index) : shared(shared), index(index) {}
  int worldSize() const override { return shared.world; }

  bool sumOverRanks(std::vector<Tensor> &values, std::string &error) override {
    std::unique_lock<std::mutex> lock(shared.mutex);
    // Wait until the previous round's sums have been taken by every rank.
    shared.changed.wait(lock, [&] { return shared.abandoned || shared.taken == 0; });
    if (shared.abandoned)
      return abandoned(error);
    uint64_t round = shared.round;
    shared.deposits[size_t(index)] = &values;
    if (++shared.arrived == shared.world) {
      shared.disagreement.clear();
      shared.addUp();
      ++shared.round;
      shared.changed.notify_all();
    } else {
      shared.changed.wait(lock, [&] {
        return shared.abandoned || shared.round != round;
      });
      if (shared.abandoned)
        return abandoned(error);
    }
    bool ok = shared.disagreement.empty();
    if (ok)
      values = shared.sums;
    else
      error = "all_reduce: " + shared.disagreement;
    if (++shared.taken == shared.world) {
      shared.arrived = shared.taken = 0;
      shared.changed.notify_all();
    }
    return ok;
  }

private:
  bool abandoned(std::string &error) {
    error = "all_reduce: another rank failed";
    return false;
  }
  Shared &shared;
  int index;
};

ThreadRanks::ThreadRanks(int world) : shared(std::make_unique<Shared>(world)) {
  for (int r = 0; r < world; ++r)
    ranks.push_back(std::make_unique<Rank>(*shared, r));
}

ThreadRanks::~ThreadRanks() = default;

Collectives &ThreadRanks::rank(int r) { return *ranks[size_t(r)]; }

void ThreadRanks::abandon() {
  std::lock_guard<std::mutex> lock(shared->mutex);
  shared->abandoned = true;
  shared->changed.notify_all();
}
