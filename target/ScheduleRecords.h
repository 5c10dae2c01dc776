//===- ScheduleRecords.h - The scheduler's records, by kind -----*- C++ -*-===//
//
// Private to target/: the pieces Scheduler.cpp puts together (the rows,
// split_rows and columns records in RowRecords.cpp) and the helpers the
// checks share.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TARGET_SCHEDULERECORDS_H
#define CGC_TARGET_SCHEDULERECORDS_H

#include "target/Scheduler.h"
#include "target/Target.h"

#include <string>

namespace cgc {

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// "FIELD must be WANT (WHY)": a check's answer for a wrong number.
inline std::string expect(ScheduleField field, int64_t want, const std::string &why) {
  return fieldName(field).str() + " must be " + std::to_string(want) + " (" + why + ")";
}

/// The rows record of row op \p row (its rows kept in registers or read
/// again; ReductionRule.h's vector and lanes).
Schedule rowsRecord(const Node &row, const Target &target);

/// The record of a reduction over trailing or leading dims: rows,
/// split_rows or columns, as ReductionRule.h decides.
Schedule reductionRecord(const Node &row, const Target &target);

/// Why \p record cannot run \p node (whose row op is \p row) on rows or
/// columns ("" if it can).
std::string checkRowRecord(const Node &node, const Node &row, const Schedule &record);

} // namespace cgc

#endif
