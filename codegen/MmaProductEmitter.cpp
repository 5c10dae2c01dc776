//===- MmaProductEmitter.cpp - The tensor-core kernel of a product ----------===//
//
// For f16 and bf16 products of one batch (an mma_product record, which
// `cgc --mma-products` asks for): one call of cgc_product_mma
// (codegen/device/product_mma.cuh, where the algorithm is) with the
// product's sizes and layout as constants, the record's columns per block
// and launch (grid ceil(n / tile) x ceil(m / 64) of 256 threads, the
// dynamic shared memory of mmaProductSharedBytesOf), and the
// epilogue as a lambda the kernel calls per element: bias, residual and
// activation in f32, then one rounding to the result's type, as the
// generated and tiled kernels do. A weight no kernel writes is requested
// before the kernel waits for its producers.
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"
#include "codegen/Product.h"

#include <cassert>

using namespace cgc;

void cgc::emitMmaProduct(const ProductParts &parts, const Schedule &record,
                         Kernel &kernel) {
  const ProductProblem &p = parts.problem;
  assert(!parts.inputNorm && "the scheduler keeps input norms off this kernel");
  std::string x = addParam(kernel, parts.a, false);
  std::string w = addParam(kernel, parts.b, false);
  std::string bias = parts.bias ? addParam(kernel, parts.bias, false) : "";
  std::string res = parts.residual ? addParam(kernel, parts.residual, false) : "";
  std::string out = addParam(kernel, parts.result, true);
  std::string N = std::to_string(p.n) + "LL";
  bool early = isConstantWeight(parts.b, parts);
  uint64_t shared = mmaProductSharedBytesOf(p, record[ScheduleField::Tile]);
  std::string epilogue = "[&](long long m, long long n, float v) {\n" +
                         productEpilogue(parts, bias, res, out, "        ") + "      }";
  kernel.body = "  cgc_product_mma<" + std::string(p.dtype == DType::BF16 ? "1" : "0") + ", " +
                (p.transB ? "1" : "0") + ", " + std::to_string(record[ScheduleField::Tile]) +
                ", " + (early ? "1" : "0") + ", " + std::to_string(p.m) + "LL, " + N + ", " +
                std::to_string(p.k) + "LL, " + std::to_string(shared) +
                "LL>(\n      (const unsigned short *)" + x +
                ", (const unsigned short *)" + w + ",\n      " + epilogue + ");\n";
  kernel.block[0] = uint32_t(record[ScheduleField::Block]);
  kernel.grid[0] = uint32_t(record[ScheduleField::GridX]);
  kernel.grid[1] = uint32_t(record[ScheduleField::GridY]);
  kernel.sharedMem = uint32_t(shared);
  kernel.wait = Kernel::Wait::InBody;
}
