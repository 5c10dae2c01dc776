//===- RunCommands.h - `cgc run` and `cgc bench` ----------------*- C++ -*-===//
//
// Library-level implementations of the two runtime subcommands, so that the
// `cgc` driver can dispatch to them. argv[0] is the subcommand name ("run" or
// "bench"); options follow. Return the process exit code.
//
//   cgc run model.cgc --inputs in.safetensors --outputs out.safetensors
//           [--overwrite] [--eager] [--graph NAME|INDEX] [--device N]
//           [--print-algorithms]
//   cgc bench model.cgc [--iters N=1000] [--warmup W=100] [--repeats R=5]
//           [--graph NAME|INDEX] [--device N] [--print-algorithms]
//
// --print-algorithms prints one line per matrix product (its shape and the
// cuBLASLt algorithm chosen on this GPU) and one per convolution (the cuDNN
// engine chosen) after the engine loads: to stdout for run, to stderr for
// bench (whose stdout is parsed).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TOOLS_RUNCOMMANDS_H
#define CGC_TOOLS_RUNCOMMANDS_H

int cgcRunMain(int argc, char **argv);
int cgcBenchMain(int argc, char **argv);

#endif // CGC_TOOLS_RUNCOMMANDS_H
