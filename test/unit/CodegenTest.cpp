//===- CodegenTest.cpp - NVRTC compiles and failures, without a GPU ---------===//
#include "codegen/CudaText.h"
#include "driver/Compiler.h"
#include "codegen/Nvrtc.h"
#include "ir/JsonReader.h"

#include <gtest/gtest.h>

using namespace cgc;

namespace {
const char *Model = R"({"format_version": 1, "name": "m",
 "inputs": [{"name": "x", "dtype": "f32", "shape": [8]}],
 "nodes": [{"name": "a", "op": "exp", "inputs": ["x"]},
           {"name": "s", "op": "sum", "inputs": ["a"]},
           {"name": "t", "op": "reshape", "inputs": ["s"], "attrs": {"shape": [1]}},
           {"name": "y", "op": "neg", "inputs": ["t"], "loc": "model.py:7"}],
 "outputs": ["y"]})";

struct Lowering {
  std::string messages;
  llvm::raw_string_ostream os{messages};
  DiagnosticEngine diag{os};
  std::unique_ptr<Graph> graph;
  Compilation lowered;

  bool lower() {
    uint32_t id = diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(Model, "m.json"));
    graph = readGraphBuffer(id, ".", diag, ReadOptions());
    return graph && lowerModel(*graph, CompileOptions(), lowered, diag);
  }
};
} // namespace

TEST(Nvrtc, CompilesTheGeneratedProgram) {
  Lowering l;
  ASSERT_TRUE(l.lower()) << l.os.str();
  DeviceCode code;
  ASSERT_TRUE(compileWithNvrtc(programSource(l.lowered.program), "sm_90", code))
      << code.log;
  EXPECT_GT(code.cubin.size(), 0u);
  EXPECT_NE(code.ptx.find(".target sm_90"), std::string::npos);
}

// The prelude's pieces (codegen/device/*.cuh) compile in every combination,
// and the helpers the kernels call instantiate for each element type: f16 and
// bf16 load as float, store from float, double and int, and take part in
// 16-byte vector accesses and dot products.
TEST(Nvrtc, PreludeCompilesWithEveryPiece) {
  const char *uses = R"(
template <class A, class B> struct cgc_test_same { static const bool value = false; };
template <class A> struct cgc_test_same<A, A> { static const bool value = true; };
template <class T, class C, int V> __device__ void cgc_test_use(T *p, const T *q, float *out) {
  static_assert(cgc_test_same<decltype(cgc_ld(q, 0)), C>::value, "cgc_ld's type");
  C v[V];
  cgc_ldv<V, C>(q, 0, v);
  cgc_stv<V>(p, 0, v);
  cgc_st(p, V, cgc_ld(q, V));
  cgc_st(p, V + 1, 2.0);
  cgc_st(p, V + 2, 3);
  *out = cgc_dot16(*reinterpret_cast<const uint4 *>(q), *reinterpret_cast<const uint4 *>(p), q);
}
extern "C" __global__ void f32(float *p, const float *q, float *o) { cgc_test_use<float, float, 4>(p, q, o); }
extern "C" __global__ void i32(int *p, const int *q, long long *o) {
  static_assert(cgc_test_same<decltype(cgc_ld(q, 0)), int>::value, "cgc_ld's type");
  int v[4];
  cgc_ldv<4, int>(q, 0, v);
  cgc_stv<4>(p, 0, v);
  *o = cgc_ld(q, 5);
}
)";
  for (int pieces = 0; pieces < 8; ++pieces) {
    bool half = pieces & 1, bfloat16 = pieces & 2, conditionals = pieces & 4;
    std::string source = cudaPrelude(half, bfloat16, conditionals) + uses;
    if (half)
      source += "extern \"C\" __global__ void f16(__half *p, const __half *q, float *o) "
                "{ cgc_test_use<__half, float, 8>(p, q, o); }\n";
    if (bfloat16)
      source += "extern \"C\" __global__ void bf16(__nv_bfloat16 *p, const __nv_bfloat16 *q, "
                "float *o) { cgc_test_use<__nv_bfloat16, float, 8>(p, q, o); }\n";
    DeviceCode code;
    EXPECT_TRUE(compileWithNvrtc(source, "sm_90", code))
        << "half " << half << " bfloat16 " << bfloat16 << " conditionals "
        << conditionals << ":\n" << code.log;
    EXPECT_EQ(code.ptx.find(".entry cgc_set_if") != std::string::npos, conditionals);
  }
}

// The tensor-core bodies (attention's and the product's, over the shared
// mma.cuh) compile alone and together, each product template instantiated
// for both weight layouts and an uneven k.
TEST(Nvrtc, TensorCorePiecesCompile) {
  const char *product = R"(
extern "C" __global__ void __launch_bounds__(256) mma_nk(const unsigned short *x, const unsigned short *w, float *o) {
  cgc_product_mma<1, 1, 16, 1, 100LL, 40LL, 72LL, 39680LL>(x, w, [&](long long m, long long n, float v) { o[m * 40 + n] = v; });
}
extern "C" __global__ void __launch_bounds__(256) mma_kn(const unsigned short *x, const unsigned short *w, float *o) {
  cgc_product_mma<0, 0, 64, 0, 64LL, 128LL, 264LL, 76032LL>(x, w, [&](long long m, long long n, float v) { o[m * 128 + n] = v; });
}
)";
  for (int pieces = 1; pieces < 4; ++pieces) {
    bool attention = pieces & 1, mmaProduct = pieces & 2;
    std::string source = cudaPrelude(true, true, false, attention, mmaProduct) +
                         (mmaProduct ? product : "");
    DeviceCode code;
    EXPECT_TRUE(compileWithNvrtc(source, "sm_90", code))
        << "attention " << attention << " mma product " << mmaProduct << ":\n" << code.log;
    EXPECT_EQ(code.ptx.find(".entry mma_nk") != std::string::npos, mmaProduct);
  }
  // A launch's shared memory that is not the kernel's layout's is refused
  // at compile time (the host's figure and the kernel's are one).
  std::string wrong = cudaPrelude(true, true, false, false, true) + R"(
extern "C" __global__ void __launch_bounds__(256) mma_bad(const unsigned short *x, const unsigned short *w, float *o) {
  cgc_product_mma<1, 1, 16, 1, 100LL, 40LL, 72LL, 39664LL>(x, w, [&](long long m, long long n, float v) { o[m * 40 + n] = v; });
}
)";
  DeviceCode bad;
  EXPECT_FALSE(compileWithNvrtc(wrong, "sm_90", bad));
  EXPECT_NE(bad.log.find("the launch's shared memory is this layout's"), std::string::npos)
      << bad.log;
}

TEST(Nvrtc, FailureNamesTheIrNodeAndKeepsTheLog) {
  Lowering l;
  ASSERT_TRUE(l.lower()) << l.os.str();
  // Break the last kernel (the one of node 'y'), as a codegen bug would.
  Kernel &broken = l.lowered.program.kernels.back();
  ASSERT_EQ(broken.node->getName(), "y");
  ASSERT_FALSE(broken.body.empty());
  broken.body.insert(0, "  undeclared_helper();\n");
  std::string source = programSource(l.lowered.program);
  DeviceCode code;
  ASSERT_FALSE(compileWithNvrtc(source, "sm_90", code));
  EXPECT_NE(code.log.find("undeclared_helper"), std::string::npos) << code.log;
  reportNvrtcFailure(l.lowered.program, code.log, l.diag);
  std::string out = l.os.str();
  EXPECT_NE(out.find("m.json:6:12: error: node 'y' (neg): NVRTC failed to "
                     "compile kernel 'neg_y':"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("undeclared_helper"), std::string::npos) << out;
  EXPECT_NE(out.find("note: node 'y' comes from model.py:7"), std::string::npos)
      << out;
}
