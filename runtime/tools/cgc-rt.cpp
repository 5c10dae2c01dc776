//===- cgc-rt.cpp - `cgc run` / `cgc bench` without the compiler ---------===//
//
// A tiny front end over RunCommands for machines that have only the runtime
// build (no LLVM): `cgc-rt run ...`, `cgc-rt bench ...`.
//
//===----------------------------------------------------------------------===//
#include "RunCommands.h"
#include "cgc/Version.h"

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("%s\n", CGC_COMPILER_VERSION);
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "run") == 0)
    return cgcRunMain(argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], "bench") == 0)
    return cgcBenchMain(argc - 1, argv + 1);
  std::fprintf(
      stderr,
      "usage: cgc-rt run model.cgc --inputs in.safetensors --outputs "
      "out.safetensors\n"
      "                  [--overwrite] [--eager] [--graph NAME|INDEX] "
      "[--device N]\n"
      "                  [--print-algorithms] [--steps N]\n"
      "       cgc-rt bench model.cgc [--inputs in.safetensors] [--iters N]\n"
      "                  [--warmup W] [--repeats R]\n"
      "                  [--graph NAME|INDEX] [--dims NAME=V,...] "
      "[--alternate-dims NAME=V,...]\n"
      "                  [--device N] [--print-algorithms]\n"
      "       cgc-rt --version\n");
  return 2;
}
