//===- ProductRule.cpp - How a matrix product runs ----------------------------===//
#include "target/ProductRule.h"
#include "target/ScheduleRecords.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include <algorithm>
#include <iterator>

using namespace cgc;

/// Whether the rows are few enough for a generated kernel (ProductRule.h).
static bool fewRowsWin(const ProductProblem &p) {
  if (p.dtype == DType::F32)
    return p.m <= kGeneratedProductMaxRows;
  uint64_t weight = uint64_t(p.n) * uint64_t(p.k) * dtypeSize(p.dtype);
  return p.m == 1 || (p.m <= kGeneratedHalfProductMaxRows &&
                      weight <= kGeneratedHalfProductSmallWeight);
}

bool cgc::tiledRuns(const ProductProblem &p) {
  return p.batch.empty() && p.dtype == DType::F32 && p.k > 0 &&
         p.m <= int64_t(65535) * kProductTile; // grid.y
}

bool cgc::generatedRuns(const ProductProblem &p) {
  return p.batch.empty() && p.m <= 32 && (p.k == 0 || (p.transB && !p.transA));
}

int64_t cgc::productTile(const ProductProblem &p, unsigned multiprocessors) {
  int64_t tiles = ((p.m + kProductTile - 1) / kProductTile) *
                  ((p.n + kProductTile - 1) / kProductTile);
  return tiles < int64_t(multiprocessors) ? kSmallProductTile : kProductTile;
}

uint64_t cgc::sharedBytesPerBlock(const Target &target) {
  // CUDA's per-block opt-in limits: sm_90, sm_100 and sm_110 227 KiB;
  // sm_80 and sm_87 163 KiB; sm_86, sm_89 and sm_120 99 KiB.
  unsigned sm = computeCapabilityOf(target.arch);
  bool datacenter = sm >= 90 && sm < 120;
  return datacenter ? 227 * 1024 : sm == 80 || sm == 87 ? 163 * 1024 : 99 * 1024;
}

uint64_t cgc::mmaProductSharedBytes(const ProductProblem &p, int64_t columns) {
  constexpr uint64_t Stages = 4, StepK = 64;
  uint64_t k16 = uint64_t(ceilDiv(p.k, 16) * 16);
  uint64_t slice = p.transB ? uint64_t(columns) * (k16 + 8) : k16 * uint64_t(columns + 8);
  return 2 * (slice + Stages * kMmaProductRows * (StepK + 8));
}

bool cgc::mmaRuns(const ProductProblem &p, const Target &target) {
  bool half = p.dtype == DType::F16 || p.dtype == DType::BF16;
  return half && p.batch.empty() && !p.transA && p.k > 0 && p.k % 8 == 0 &&
         (p.transB || p.n % 8 == 0) && computeCapabilityOf(target.arch) >= 80 &&
         ceilDiv(p.m, kMmaProductRows) <= 65535 && // grid.y
         mmaProductSharedBytes(p, 16) <= sharedBytesPerBlock(target);
}

int64_t cgc::mmaProductColumns(const ProductProblem &p, const Target &target) {
  for (int64_t columns : kMmaProductColumns)
    if (ceilDiv(p.m, kMmaProductRows) * ceilDiv(p.n, columns) >=
            int64_t(target.multiprocessors) &&
        mmaProductSharedBytes(p, columns) <= sharedBytesPerBlock(target))
      return columns;
  return std::end(kMmaProductColumns)[-1]; // the narrowest: mmaRuns checked it fits
}

int64_t cgc::generatedProductVector(const ProductProblem &p) {
  int64_t elem = dtypeSize(p.dtype);
  return (p.k * elem) % 16 == 0 ? 16 / elem : 1;
}

/// The measured rule of ProductRule.h.
static bool tiledWins(const ProductProblem &p) {
  uint64_t outputs = uint64_t(p.m) * uint64_t(p.n);
  uint64_t macs = outputs * uint64_t(p.k);
  return p.k <= kTiledProductMaxK && outputs <= kTiledProductMaxOutputs &&
         macs <= kTiledProductMaxMacs &&
         (p.k <= kTiledProductShortK || macs <= kTiledProductLongKMaxMacs);
}

/// "m = 8 <= 16 rows (f32)" and the like, for a record's reason.
static std::string shapeText(const ProductProblem &p) {
  return "m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) +
         " k=" + std::to_string(p.k) + " batch=" +
         std::to_string(std::max<int64_t>(p.batchCount(), 1)) + " " +
         dtypeName(p.dtype).str();
}

Strategy cgc::productStrategy(const ProductProblem &p, const Target &target,
                              std::string *reason) {
  auto decide = [&](Strategy s, const std::string &why) {
    if (reason)
      *reason = shapeText(p) + ": " + why;
    return s;
  };
  // An empty contraction reads no weight at all: only the epilogue runs.
  bool small = p.batch.empty() && p.m <= kGeneratedProductMaxRows;
  if (small && p.k == 0)
    return decide(Strategy::GeneratedProduct,
                  "k=0 (cuBLASLt cannot run an empty contraction)");
  switch (target.products) {
  case ProductPolicy::CostRule: {
    uint64_t weight = uint64_t(p.n) * uint64_t(p.k) * dtypeSize(p.dtype);
    if (small && p.transB && !p.transA && fewRowsWin(p))
      return decide(Strategy::GeneratedProduct,
                    p.dtype == DType::F32
                        ? "m <= " + std::to_string(kGeneratedProductMaxRows) +
                              " rows, weight along k"
                    : p.m == 1 ? "one row, weight along k"
                               : "m <= " +
                                     std::to_string(kGeneratedHalfProductMaxRows) +
                                     " rows and weight " + std::to_string(weight) +
                                     " <= " +
                                     std::to_string(kGeneratedHalfProductSmallWeight) +
                                     " bytes, weight along k");
    uint64_t outputs = uint64_t(p.m) * uint64_t(p.n);
    std::string work = "m*n=" + std::to_string(outputs) + " m*n*k=" +
                       std::to_string(outputs * uint64_t(p.k));
    if (tiledRuns(p) && tiledWins(p))
      return decide(Strategy::TiledProduct,
                    "f32, one batch, k <= " + std::to_string(kTiledProductMaxK) +
                        ", " + work + " within the tiled limits");
    return decide(Strategy::LibraryProduct,
                  "past the generated and tiled limits (" + work + ")");
  }
  case ProductPolicy::LibraryOnly:
    return decide(Strategy::LibraryProduct, "--library-products");
  case ProductPolicy::TiledWherePossible:
    return tiledRuns(p) ? decide(Strategy::TiledProduct, "--tiled-products")
                        : decide(Strategy::LibraryProduct,
                                 "--tiled-products, not tileable");
  case ProductPolicy::MmaWherePossible:
    return mmaRuns(p, target)
               ? decide(Strategy::MmaProduct, "--mma-products")
               : decide(Strategy::LibraryProduct,
                        "--mma-products, not for the tensor-core kernel");
  }
  llvm_unreachable("a ProductPolicy value");
}

bool cgc::computesInputRows(const ProductProblem &p, Strategy strategy) {
  uint64_t rows = uint64_t(p.m) * uint64_t(p.k) * dtypeSize(p.dtype);
  return strategy == Strategy::GeneratedProduct &&
         rows <= kComputedInputMaxBytes && p.k > 0;
}

bool cgc::computesInputPrologue(const ProductProblem &p, Strategy strategy,
                                size_t ops) {
  uint64_t blocks = uint64_t(ceilDiv(p.n, kGeneratedProductBlock / 32));
  uint64_t evaluations = blocks * uint64_t(p.m) * uint64_t(p.k) * ops;
  return computesInputRows(p, strategy) && ops <= kPrologueMaxOps &&
         evaluations <= kPrologueMaxEvaluations;
}

uint64_t cgc::productWorkspaceBytes(const ProductProblem &p) {
  uint64_t bytes = 4 * uint64_t(p.m) * uint64_t(p.n) *
                   uint64_t(std::max<int64_t>(p.batchCount(), 1));
  return std::clamp<uint64_t>(bytes, uint64_t(1) << 20, uint64_t(32) << 20);
}
