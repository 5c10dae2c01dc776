//===- ScheduleReader.cpp - A node's "schedule" field from the JSON ----------===//
//
//   "schedule": {"strategy": "rows", "rows": 4, "length": 8, "vector": 4,
//                "lanes": 2, "loads": 1, "grid_x": 1, "block": 256,
//                "scratch": 0, "reason": "..."}
//
// Every field of the strategy (ir/Strategies.def) is required, as an
// integer from 0 to 2^62; `reason` is optional. Whether the record can run
// is the schedule pass's check (target/Scheduler.h), not the reader's.
//
//===----------------------------------------------------------------------===//
#include "ir/ReaderContext.h"
#include "ir/ScheduleReader.h"

#include <vector>

using namespace cgc;

/// Field values above this are refused (products of them stay in int64).
static constexpr int64_t kMaxFieldValue = int64_t(1) << 62;

bool cgc::readSchedule(ReaderContext &ctx, const Json &j,
                       const std::string &pointer, const std::string &what,
                       Schedule &out) {
  if (!ctx.expectObject(j, pointer, what + ": 'schedule'"))
    return false;
  const Json &name = j.contains("strategy") ? j["strategy"] : Json();
  auto strategy = name.is_string() ? lookupStrategy(name.get<std::string>())
                                   : llvm::None;
  if (!strategy) {
    std::string known;
#define CGC_STRATEGY(Enum, Mnemonic, Fields)                                   \
  known += (known.empty() ? "" : ", ") + std::string(Mnemonic);
#include "ir/Strategies.def"
    ctx.error(j.contains("strategy") ? pointer + "/strategy" : pointer,
              what + ": schedule strategy must be one of " + known);
    return false;
  }
  out.strategy = *strategy;
  std::vector<std::string> names = {"strategy", "reason"};
  for (unsigned f = 0; f < kNumScheduleFields; ++f)
    if (strategyHas(out.strategy, ScheduleField(f)))
      names.push_back(fieldName(ScheduleField(f)).str());
  std::vector<llvm::StringRef> allowed(names.begin(), names.end());
  std::vector<llvm::StringRef> required(names.begin() + 2, names.end());
  required.push_back("strategy");
  if (!ctx.checkFields(j, pointer, allowed, required,
                       what + ": schedule '" + strategyName(out.strategy).str() + "'"))
    return false;
  for (unsigned f = 0; f < kNumScheduleFields; ++f) {
    if (!strategyHas(out.strategy, ScheduleField(f)))
      continue;
    std::string key = fieldName(ScheduleField(f)).str();
    const Json &v = j[key];
    bool ok = v.is_number_integer() && !v.is_number_unsigned()
                  ? v.get<int64_t>() >= 0 && v.get<int64_t>() <= kMaxFieldValue
                  : v.is_number_unsigned() && v.get<uint64_t>() <= kMaxFieldValue;
    if (!ok) {
      ctx.error(pointer + "/" + key, what + ": schedule field '" + key +
                                         "' must be an integer from 0 to 2^62");
      return false;
    }
    out.values[f] = v.get<int64_t>();
  }
  if (j.contains("reason")) {
    if (!j["reason"].is_string()) {
      ctx.error(pointer + "/reason", what + ": schedule 'reason' must be a string");
      return false;
    }
    out.reason = j["reason"].get<std::string>();
  }
  return true;
}
