//===- Schedule.h - How a heavy node runs: its recorded decision -*- C++ -*-===//
//
// The schedule pass (passes/Schedule.cpp) records on every heavy node (a
// matrix product, a row or column kernel) how it runs: the strategy, its
// shape class, launch and scratch, and the reason (the rule and the numbers
// it compared). plan-memory, lowering and the emitters read the record and
// never decide again. The IR only holds, prints, writes and reads records;
// the scheduling library (target/Scheduler.h) computes and checks them.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_SCHEDULE_H
#define CGC_IR_SCHEDULE_H

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <string>

namespace cgc {

/// The numbers a record may hold (which ones, per strategy: Strategies.def).
enum class ScheduleField : uint8_t {
  Rows, Length, Inner, Vector, Lanes, Loads, Chunks, Tile, GridX, GridY,
  Block, Scratch,
};
constexpr unsigned kNumScheduleFields = 12;

enum class Strategy : uint8_t {
#define CGC_STRATEGY(Enum, Mnemonic, Fields) Enum,
#include "ir/Strategies.def"
};

/// "generated_product", "rows", ...
llvm::StringRef strategyName(Strategy strategy);
llvm::Optional<Strategy> lookupStrategy(llvm::StringRef name);
/// "rows", "grid_x", ...
llvm::StringRef fieldName(ScheduleField field);
/// Whether a record of \p strategy holds \p field.
bool strategyHas(Strategy strategy, ScheduleField field);

struct Schedule {
  Strategy strategy = Strategy::Rows;
  /// Indexed by ScheduleField; fields the strategy does not hold are 0.
  std::array<int64_t, kNumScheduleFields> values{};
  /// Why: the rule and the numbers it compared.
  std::string reason;

  int64_t operator[](ScheduleField f) const { return values[unsigned(f)]; }
  int64_t &operator[](ScheduleField f) { return values[unsigned(f)]; }
  bool operator==(const Schedule &other) const {
    return strategy == other.strategy && values == other.values;
  }
  bool operator!=(const Schedule &other) const { return !(*this == other); }
};

/// `rows(rows = 4, length = 8, ...) "reason"`, the form `--print-ir` shows.
std::string formatSchedule(const Schedule &schedule);

} // namespace cgc

#endif
