//===- main.cpp - Embedding the cgc runtime ------------------------------===//
//
// Loads a .cgc, fills every f32 input with a value, replays graph 0 and
// prints the first elements of every f32 output. Uses only the C++ wrapper
// over the C ABI; no CUDA headers or libraries are needed to build it.
//
//   embed model.cgc [value]
//
//===----------------------------------------------------------------------===//
#include <cgc/runtime.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: embed model.cgc [value]\n");
    return 2;
  }
  float value = argc > 2 ? std::strtof(argv[2], nullptr) : 1.0f;
  cgc::Engine engine;
  cgc::Context ctx;
  cgc::Status s = cgc::Engine::loadFile(argv[1], engine);
  if (s)
    s = cgc::Context::create(engine, ctx);
  if (!s) {
    std::fprintf(stderr, "embed: error: %s\n", s.message.c_str());
    return 1;
  }
  cgc_tensor_info info;
  for (size_t i = 0; i < cgc_engine_num_tensors(engine.get(), CGC_ROLE_INPUT);
       ++i) {
    cgc_engine_tensor_info(engine.get(), CGC_ROLE_INPUT, i, &info);
    if (info.dtype != CGC_DTYPE_F32)
      continue;
    std::vector<float> host(info.bytes / sizeof(float), value);
    if (!(s = ctx.writeInput(info.name, host.data(), info.bytes)))
      break;
  }
  if (s)
    s = ctx.run(/*graph=*/0); // Replays on the default stream.
  for (size_t i = 0;
       s && i < cgc_engine_num_tensors(engine.get(), CGC_ROLE_OUTPUT); ++i) {
    cgc_engine_tensor_info(engine.get(), CGC_ROLE_OUTPUT, i, &info);
    if (info.dtype != CGC_DTYPE_F32)
      continue;
    std::vector<float> host(info.bytes / sizeof(float));
    if (!(s = ctx.readOutput(info.name, host.data(), info.bytes)))
      break;
    std::printf("%s[0..3] =", info.name);
    for (size_t k = 0; k < host.size() && k < 4; ++k)
      std::printf(" %g", host[k]);
    std::printf("\n");
  }
  if (!s) {
    std::fprintf(stderr, "embed: error: %s\n", s.message.c_str());
    return 1;
  }
  return 0;
}
