//===- RuntimeThreads.cpp - The runtime's host paths from many threads ----===//
//
// Under ThreadSanitizer, with the stub driver (StubDriver.cpp) standing in
// for libcuda.so.1: what cgc_runtime.h allows concurrently, done at once.
// Eight threads each create a context of one shared engine and, 200
// times, write its inputs, replay (and every tenth time replay eagerly),
// read its outputs, bind an input to a buffer of their own and back, and
// read the context's counters; two more threads load and destroy engines
// of the same artifact meanwhile. Exit status 1 on any failed call; the
// sanitizer's own exit status on a data race.
//
//   runtime_threads model.cgc
//
//===----------------------------------------------------------------------===//
#include "cgc/cgc_runtime.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<int> gFailures{0};

bool check(cgc_status s, const char *what) {
  if (s == CGC_OK)
    return true;
  std::fprintf(stderr, "runtime_threads: %s: %s (%s)\n", what, cgc_status_message(s),
               cgc_last_error());
  ++gFailures;
  return false;
}

/// The engine's user inputs or outputs.
std::vector<cgc_tensor_info> tensors(cgc_engine engine, cgc_tensor_role role) {
  std::vector<cgc_tensor_info> out;
  for (size_t i = 0; i < cgc_engine_num_tensors(engine, role); ++i) {
    cgc_tensor_info info;
    cgc_engine_tensor_info(engine, role, i, &info);
    if (role != CGC_ROLE_INPUT || std::strcmp(info.kind, "user_input") == 0)
      out.push_back(info);
  }
  return out;
}

void contextWork(cgc_engine engine, int index) {
  cgc_context ctx = nullptr;
  if (!check(cgc_context_create(engine, nullptr, 0, &ctx), "context_create"))
    return;
  std::vector<cgc_tensor_info> inputs = tensors(engine, CGC_ROLE_INPUT);
  std::vector<cgc_tensor_info> outputs = tensors(engine, CGC_ROLE_OUTPUT);
  std::vector<std::vector<uint8_t>> host(inputs.size()), back(outputs.size()), own;
  for (size_t i = 0; i < inputs.size(); ++i) {
    host[i].assign(inputs[i].bytes, uint8_t(index));
    own.emplace_back(inputs[i].bytes + 256);
  }
  for (size_t o = 0; o < outputs.size(); ++o)
    back[o].resize(outputs[o].bytes);
  for (int round = 0; round < 200 && gFailures == 0; ++round) {
    for (size_t i = 0; i < inputs.size(); ++i)
      check(cgc_context_write_input(ctx, inputs[i].name, host[i].data(), host[i].size(),
                                    nullptr),
            "write_input");
    check(round % 10 == 9 ? cgc_run_eager(ctx, 0, nullptr, 0, nullptr)
                          : cgc_run(ctx, 0, nullptr, 0, nullptr),
          "run");
    for (size_t o = 0; o < outputs.size(); ++o)
      check(cgc_context_read_output(ctx, outputs[o].name, back[o].data(), back[o].size(),
                                    nullptr),
            "read_output");
    if (!inputs.empty() && round % 4 == 0) {
      // (the stub's device memory is host memory: a 256-aligned host buffer)
      auto p = reinterpret_cast<uintptr_t>(own[0].data());
      void *aligned = reinterpret_cast<void *>((p + 255) / 256 * 256);
      check(cgc_context_bind(ctx, inputs[0].name, aligned), "bind");
      check(cgc_run(ctx, 0, nullptr, 0, nullptr), "run bound");
      check(cgc_context_bind(ctx, inputs[0].name, nullptr), "unbind");
    }
    cgc_counters counters;
    check(cgc_context_counters(ctx, &counters), "counters");
  }
  cgc_context_destroy(ctx);
}

void engineWork(const char *path) {
  for (int k = 0; k < 5 && gFailures == 0; ++k) {
    cgc_engine engine = nullptr;
    if (check(cgc_engine_load_file(path, 0, &engine), "engine_load_file"))
      cgc_engine_destroy(engine);
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: runtime_threads model.cgc\n");
    return 2;
  }
  cgc_engine engine = nullptr;
  if (!check(cgc_engine_load_file(argv[1], 0, &engine), "engine_load_file"))
    return 1;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back(contextWork, engine, t);
  for (int t = 0; t < 2; ++t)
    threads.emplace_back(engineWork, argv[1]);
  for (std::thread &t : threads)
    t.join();
  cgc_engine_destroy(engine);
  std::printf("runtime_threads: %s: 8 contexts x 200 rounds, 10 engine loads, %d failures\n",
              argv[1], gFailures.load());
  return gFailures == 0 ? 0 : 1;
}
