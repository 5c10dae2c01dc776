//===- ScheduleReader.h - A node's "schedule" field from the JSON -*- C++ -*-===//
#ifndef CGC_IR_SCHEDULEREADER_H
#define CGC_IR_SCHEDULEREADER_H

#include "ir/ReaderContext.h"
#include "ir/Schedule.h"

namespace cgc {

/// Reads the record at \p pointer into \p out; \p what names the node in
/// messages. False after reporting a located error.
bool readSchedule(ReaderContext &ctx, const Json &j, const std::string &pointer,
                  const std::string &what, Schedule &out);

} // namespace cgc

#endif
