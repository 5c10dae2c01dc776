//===- RowRecords.cpp - The records of row and column kernels ---------------===//
//
// The rows, split_rows and columns records of a row op (ReductionRule.h
// decides which), and their check: the numbers each kernel of
// codegen/RowEmitter.cpp and ReduceEmitter.cpp needs. Scheduler.cpp asks
// these for every node that runs on rows.
//
//===----------------------------------------------------------------------===//
#include "target/ScheduleRecords.h"

#include "target/ReductionRule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

using namespace cgc;
using F = ScheduleField;

static DType inputType(const Node &row) { return row.operand(0)->getType().dtype; }

/// The row op's rows and length: its reduced run, or its trailing axes.
static std::pair<int64_t, int64_t> rowsOf(const Node &row) {
  RowSchedule s = rowScheduleOf(row);
  return {s.rows, s.length};
}

static uint32_t rowBlock(unsigned lanes) {
  return lanes > 32 ? lanes : RowSchedule::kRowBlock;
}

static int64_t rowGrid(int64_t rows, unsigned lanes, const Target &target) {
  int64_t slots = lanes > 32 ? 1 : RowSchedule::kRowBlock / lanes;
  return residentGrid(ceilDiv(rows, slots), rowBlock(lanes),
                      target.multiprocessors);
}

/// The scratch of a rows record: a reduced cross_entropy's per-row losses
/// and counts for its second kernel; no other row op has a second kernel.
static int64_t rowsScratch(const Node &row) {
  return row.getOp() == OpKind::CrossEntropy ? int64_t(phaseScratchBytes(row))
                                             : 0;
}

/// Whether a split reduction of \p length elements of \p dtype loads
/// float4 in phase 1.
static bool splitLoadsFloat4(DType dtype, int64_t length) {
  return dtype == DType::F32 && length % 4 == 0;
}

/// The block of the split and column kernels: 256 threads (32 x 8 for
/// columns).
constexpr int64_t kPartialsBlock = 256;

Schedule cgc::rowsRecord(const Node &row, const Target &target) {
  RowSchedule rs = rowScheduleOf(row);
  std::string streamed;
  if (row.getOp() == OpKind::CrossEntropy && rs.lanes > kStreamingRowBlock) {
    rs.lanes = kStreamingRowBlock;
    rs.loads = ceilDiv(std::max<int64_t>(ceilDiv(rs.length, rs.vector), 1),
                       rs.lanes);
    streamed = ", streamed by at most " + std::to_string(kStreamingRowBlock) +
               " lanes";
  }
  Schedule s;
  s.strategy = Strategy::Rows;
  s[F::Rows] = rs.rows;
  s[F::Length] = rs.length;
  s[F::Vector] = rs.vector;
  s[F::Lanes] = rs.lanes;
  s[F::Loads] = rs.loads;
  s[F::Block] = rowBlock(rs.lanes);
  s[F::GridX] = rowGrid(rs.rows, rs.lanes, target);
  s[F::Scratch] = rowsScratch(row);
  s.reason = std::to_string(rs.rows) + " rows of " + std::to_string(rs.length) +
             ": " + std::to_string(rs.vector) + "-element loads, the fewest " +
             "lanes (a power of two, <= 1024) that hold <= " +
             std::to_string(RowSchedule::kRowRegisterElements) +
             " elements each" + streamed +
             (rs.inRegisters() ? "; the row stays in registers"
                               : "; the row is read again per pass");
  return s;
}

Schedule cgc::reductionRecord(const Node &row, const Target &target) {
  ReductionSplit split = reductionSplit(row);
  DType dtype = inputType(row);
  if (split.chunks) {
    Schedule s;
    s.strategy = Strategy::SplitRows;
    s[F::Rows] = split.rows;
    s[F::Length] = split.length;
    s[F::Vector] = splitLoadsFloat4(dtype, split.length) ? 4 : 1;
    s[F::Chunks] = split.chunks;
    s[F::GridX] = split.rows * split.chunks;
    s[F::Block] = kPartialsBlock;
    s[F::Scratch] = int64_t(phaseScratchBytes(row));
    s.reason = std::to_string(split.rows) + " rows < " +
               std::to_string(kSplitReductionMaxRows) + " of " +
               std::to_string(split.length) + " >= " +
               std::to_string(kSplitReductionMinLength) + ": " +
               std::to_string(split.chunks) + " blocks of <= " +
               std::to_string(kSplitReductionChunk) + " per row, then the " +
               "partials in order";
    return s;
  }
  ColumnSplit c = columnSplit(row);
  if (!c.chunks)
    return rowsRecord(row, target);
  Schedule s;
  s.strategy = Strategy::Columns;
  s[F::Rows] = c.outer;
  s[F::Length] = c.length;
  s[F::Inner] = c.inner;
  s[F::Vector] = c.vector;
  s[F::Chunks] = c.chunks;
  s[F::GridX] = c.tiles() * c.chunks;
  s[F::Block] = kPartialsBlock;
  s[F::Scratch] = int64_t(phaseScratchBytes(row));
  s.reason = std::to_string(c.tiles()) + " column tiles of " +
             std::to_string(32 * c.vector) + ", " + std::to_string(c.chunks) +
             " chunks each: toward " + std::to_string(kColumnTargetBlocks) +
             " blocks with >= " + std::to_string(kColumnMinChunkRows) +
             " rows per chunk";
  return s;
}

/// Whether \p vector elements per load can read rows of \p length of
/// \p dtype: a whole word that divides the row (bool and i64: 1).
static bool loadFits(int64_t vector, int64_t length, DType dtype) {
  if (vector == 1)
    return true;
  if (dtype == DType::Bool || dtype == DType::I64 || vector <= 0)
    return false;
  int64_t bytes = vector * dtypeSize(dtype);
  return (bytes == 4 || bytes == 8 || bytes == 16) && length % vector == 0;
}

static std::string checkRows(const Node &node, const Node &row,
                             const Schedule &r) {
  auto [rows, length] = rowsOf(row);
  auto run = reducedRun(row);
  if (run && run->inner != 1)
    return "a reduction over dims that are not innermost runs as columns";
  if (r[F::Rows] != rows)
    return expect(F::Rows, rows, "the op's rows");
  if (r[F::Length] != length)
    return expect(F::Length, length, "the op's row length");
  DType dtype = inputType(row);
  if (!loadFits(r[F::Vector], length, dtype))
    return "vector " + std::to_string(r[F::Vector]) + " does not load rows of " +
           std::to_string(length) + " " + dtypeName(dtype).str() +
           " (whole 4-, 8- or 16-byte words that divide the row)";
  int64_t lanes = r[F::Lanes];
  int64_t cap = row.getOp() == OpKind::CrossEntropy ? kStreamingRowBlock : 1024;
  if (lanes < 1 || lanes > cap || !llvm::isPowerOf2_64(uint64_t(lanes)))
    return "lanes must be a power of two from 1 to " + std::to_string(cap);
  int64_t units = std::max<int64_t>(ceilDiv(length, r[F::Vector]), 1);
  if (r[F::Loads] != ceilDiv(units, lanes))
    return expect(F::Loads, ceilDiv(units, lanes), "vectors per row / lanes");
  if (r[F::Block] != rowBlock(unsigned(lanes)))
    return expect(F::Block, rowBlock(unsigned(lanes)),
                  "a block per row above 32 lanes, else 256 threads");
  if (r[F::GridX] < 1 || r[F::GridX] > INT32_MAX)
    return "grid_x must be from 1 to 2^31 - 1";
  int64_t scratch = rowsScratch(row);
  if (r[F::Scratch] != scratch)
    return expect(F::Scratch, scratch,
                  "a reduced cross_entropy's per-row losses and counts, "
                  "else none");
  if (node.getOp() == OpKind::RowFusion &&
      !rowScheduleIn(r).inRegisters())
    return "a row_fusion keeps its rows in registers: at most " +
           std::to_string(RowSchedule::kRowRegisterElements) +
           " elements per lane";
  return "";
}

static std::string checkSplit(const Node &node, const Node &row,
                              const Schedule &r) {
  auto run = reducedRun(row);
  if (!run || run->inner != 1 || node.getOp() == OpKind::RowFusion)
    return "split_rows runs a reduction over trailing dims";
  if (r[F::Rows] != run->outer)
    return expect(F::Rows, run->outer, "the op's rows");
  if (r[F::Length] != run->length)
    return expect(F::Length, run->length, "the op's row length");
  bool float4 = splitLoadsFloat4(inputType(row), run->length);
  if (r[F::Vector] != 1 && !(r[F::Vector] == 4 && float4))
    return "vector must be 1, or 4 for f32 rows of a multiple of 4";
  if (r[F::Chunks] < 2 || r[F::Chunks] > run->length ||
      r[F::Chunks] * run->outer > INT32_MAX)
    return "chunks must be from 2 to the row length";
  if (r[F::GridX] != run->outer * r[F::Chunks])
    return expect(F::GridX, run->outer * r[F::Chunks], "rows x chunks");
  if (r[F::Block] != kPartialsBlock)
    return expect(F::Block, kPartialsBlock, "the split kernels' block");
  int64_t scratch = run->outer * r[F::Chunks] * partialBytesOf(inputType(row));
  if (r[F::Scratch] != scratch)
    return expect(F::Scratch, scratch, "one partial per block");
  return "";
}

static std::string checkColumns(const Node &node, const Node &row,
                                const Schedule &r) {
  auto run = reducedRun(row);
  if (!run || run->inner == 1 || node.getOp() == OpKind::RowFusion)
    return "columns runs a reduction over dims that are not innermost";
  if (r[F::Rows] != run->outer || r[F::Length] != run->length ||
      r[F::Inner] != run->inner)
    return "rows, length and inner must be the op's " +
           std::to_string(run->outer) + ", " + std::to_string(run->length) +
           " and " + std::to_string(run->inner);
  DType dtype = inputType(row);
  bool wide = dtype == DType::F32 || dtype == DType::I32;
  if (r[F::Vector] != 1 && !(wide && loadFits(r[F::Vector], run->inner, dtype)))
    return "vector " + std::to_string(r[F::Vector]) +
           " does not load these columns (f32 or i32 words that divide inner)";
  if (r[F::Chunks] < 1 || r[F::Chunks] > std::max<int64_t>(run->length, 1))
    return "chunks must be from 1 to the reduced length";
  ColumnSplit c = columnSplitIn(r);
  if (r[F::GridX] != c.tiles() * c.chunks)
    return expect(F::GridX, c.tiles() * c.chunks, "column tiles x chunks");
  if (r[F::Block] != kPartialsBlock)
    return expect(F::Block, kPartialsBlock, "32 x 8 threads per tile");
  int64_t scratch = c.chunks > 1 ? c.chunks * c.outer * c.inner *
                                       partialBytesOf(dtype)
                                 : 0;
  if (r[F::Scratch] != scratch)
    return expect(F::Scratch, scratch, "one partial per chunk and column");
  return "";
}

std::string cgc::checkRowRecord(const Node &node, const Node &row, const Schedule &record) {
  switch (record.strategy) {
  case Strategy::Rows: return checkRows(node, row, record);
  case Strategy::SplitRows: return checkSplit(node, row, record);
  case Strategy::Columns: return checkColumns(node, row, record);
  case Strategy::GeneratedProduct:
  case Strategy::TiledProduct:
  case Strategy::MmaProduct:
  case Strategy::LibraryProduct:
  case Strategy::FusedAttention:
  case Strategy::MmaAttention:
  case Strategy::DecodeAttention:
  case Strategy::LibraryConvolution:
    return "a row op runs as rows, split_rows or columns, not " +
           strategyName(record.strategy).str();
  }
  llvm_unreachable("a Strategy value");
}
