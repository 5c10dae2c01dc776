//===- Schedule.cpp - Names and the text form of schedule records ------------===//
#include "ir/Schedule.h"

#include <nlohmann/json.hpp>

using namespace cgc;

namespace {
struct StrategyInfo {
  Strategy strategy;
  const char *name;
  uint32_t fields;
};

constexpr StrategyInfo Strategies[] = {
#define F(Field) (1u << unsigned(ScheduleField::Field))
#define CGC_STRATEGY(Enum, Mnemonic, Fields) {Strategy::Enum, Mnemonic, Fields},
#include "ir/Strategies.def"
#undef F
};

constexpr const char *FieldNames[kNumScheduleFields] = {
    "rows", "length", "inner", "vector", "lanes", "loads",
    "chunks", "tile", "grid_x", "grid_y", "block", "scratch"};
} // namespace

llvm::StringRef cgc::strategyName(Strategy strategy) {
  return Strategies[unsigned(strategy)].name;
}

llvm::Optional<Strategy> cgc::lookupStrategy(llvm::StringRef name) {
  for (const StrategyInfo &info : Strategies)
    if (name == info.name)
      return info.strategy;
  return llvm::None;
}

llvm::StringRef cgc::fieldName(ScheduleField field) {
  return FieldNames[unsigned(field)];
}

bool cgc::strategyHas(Strategy strategy, ScheduleField field) {
  return Strategies[unsigned(strategy)].fields & (1u << unsigned(field));
}

std::string cgc::formatSchedule(const Schedule &schedule) {
  std::string out = strategyName(schedule.strategy).str() + "(";
  bool first = true;
  for (unsigned f = 0; f < kNumScheduleFields; ++f) {
    if (!strategyHas(schedule.strategy, ScheduleField(f)))
      continue;
    out += (first ? "" : ", ") + fieldName(ScheduleField(f)).str() + " = " +
           std::to_string(schedule.values[f]);
    first = false;
  }
  out += ")";
  if (!schedule.reason.empty())
    out += " " + nlohmann::json(schedule.reason).dump();
  return out;
}
