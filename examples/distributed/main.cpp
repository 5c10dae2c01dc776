//===- main.cpp - Data-parallel training steps from C++, one process a rank --===//
//
// How a C++ application runs a `cgc --train --data-parallel` artifact:
// rank 0 makes NCCL's unique id and writes it to a file the others read
// (an application would use its own channel: MPI, a socket, its launcher),
// each rank loads the artifact on its GPU, joins the ranks, and replays
// its steps on its own batch; at the end it prints the loss, the time per
// step (CUDA events around the steps) and a hash of every parameter's
// bytes, which must be the same on every rank.
//
//   train_ranks step.cgc --rank R --world W --id-file PATH [--device D]
//               [--steps N] [--timeout-ms T]
//
// Exit status: 0 on success, 1 on a failed call (the runtime's message on
// stderr), 2 on a bad command line.
//
//===----------------------------------------------------------------------===//
#include <cgc/cgc_runtime.h>

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  const char *artifact = nullptr, *idFile = nullptr;
  int rank = -1, world = 0, device = -1, steps = 20;
  uint32_t timeoutMs = 60000;
};

bool ok(cgc_status s, const char *what) {
  if (s == CGC_OK)
    return true;
  std::fprintf(stderr, "train_ranks: %s: %s (%s)\n", what, cgc_status_message(s),
               cgc_last_error());
  return false;
}

bool parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool value = i + 1 < argc;
    if (a == "--rank" && value) o.rank = std::atoi(argv[++i]);
    else if (a == "--world" && value) o.world = std::atoi(argv[++i]);
    else if (a == "--id-file" && value) o.idFile = argv[++i];
    else if (a == "--device" && value) o.device = std::atoi(argv[++i]);
    else if (a == "--steps" && value) o.steps = std::atoi(argv[++i]);
    else if (a == "--timeout-ms" && value) o.timeoutMs = uint32_t(std::atol(argv[++i]));
    else if (!o.artifact && a[0] != '-') o.artifact = argv[i];
    else return false;
  }
  if (o.device < 0)
    o.device = o.rank;
  return o.artifact && o.idFile && o.world >= 1 && o.rank >= 0 && o.rank < o.world &&
         o.steps >= 1;
}

/// Rank 0 writes the id (to a temporary file, then renamed, so a reader
/// never sees half of it); the others wait for it, at most a minute.
bool shareUniqueId(const Options &o, unsigned char (&id)[CGC_NCCL_UNIQUE_ID_BYTES]) {
  if (o.rank == 0) {
    if (!ok(cgc_nccl_unique_id(id, sizeof id), "cgc_nccl_unique_id"))
      return false;
    std::string tmp = std::string(o.idFile) + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<char *>(id), sizeof id);
    return std::rename(tmp.c_str(), o.idFile) == 0;
  }
  for (int tries = 0; tries < 600; ++tries) {
    std::ifstream in(o.idFile, std::ios::binary);
    if (in.read(reinterpret_cast<char *>(id), sizeof id))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "train_ranks: no unique id in %s after a minute\n", o.idFile);
  return false;
}

/// This rank's batch: every user input filled with numbers drawn from a
/// seed of its rank (the class indices of an integer input below 10).
bool writeBatch(cgc_engine engine, cgc_context ctx, int rank, cudaStream_t stream) {
  std::mt19937 rng(1000 + unsigned(rank));
  for (size_t i = 0; i < cgc_engine_num_tensors(engine, CGC_ROLE_INPUT); ++i) {
    cgc_tensor_info info;
    if (!ok(cgc_engine_tensor_info(engine, CGC_ROLE_INPUT, i, &info), "tensor info"))
      return false;
    if (std::strcmp(info.kind, "user_input") != 0)
      continue;
    std::vector<unsigned char> bytes(info.bytes);
    if (info.dtype == CGC_DTYPE_F32) {
      std::normal_distribution<float> normal;
      for (size_t k = 0; k + 4 <= bytes.size(); k += 4) {
        float v = normal(rng);
        std::memcpy(&bytes[k], &v, 4);
      }
    } else if (info.dtype == CGC_DTYPE_I64) {
      for (size_t k = 0; k + 8 <= bytes.size(); k += 8) {
        int64_t v = int64_t(rng() % 10);
        std::memcpy(&bytes[k], &v, 8);
      }
    }
    if (!ok(cgc_context_write_input(ctx, info.name, bytes.data(), bytes.size(), stream),
            info.name))
      return false;
  }
  return true;
}

/// FNV-1a over every parameter's bytes, in manifest order.
bool parameterHash(cgc_engine engine, uint64_t &hash) {
  hash = 1469598103934665603ull;
  for (size_t i = 0; i < cgc_engine_num_tensors(engine, CGC_ROLE_STATE); ++i) {
    cgc_tensor_info info;
    cgc_engine_tensor_info(engine, CGC_ROLE_STATE, i, &info);
    if (std::strcmp(info.kind, "parameter") != 0)
      continue;
    std::vector<unsigned char> bytes(info.bytes);
    if (!ok(cgc_engine_state_read(engine, info.name, bytes.data(), bytes.size()), info.name))
      return false;
    for (unsigned char b : bytes)
      hash = (hash ^ b) * 1099511628211ull;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr, "usage: train_ranks step.cgc --rank R --world W --id-file PATH "
                         "[--device D] [--steps N] [--timeout-ms T]\n");
    return 2;
  }
  unsigned char id[CGC_NCCL_UNIQUE_ID_BYTES];
  cudaSetDevice(o.device);
  cgc_engine engine = nullptr;
  cgc_context ctx = nullptr;
  if (!shareUniqueId(o, id) ||
      !ok(cgc_engine_load_file(o.artifact, o.device, &engine), "load"))
    return 1;
  cgc_ranks ranks = {nullptr, id, o.rank, o.world, o.timeoutMs};
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  size_t graph = 0;
  bool good = ok(cgc_engine_join(engine, &ranks), "cgc_engine_join") &&
              ok(cgc_context_create(engine, nullptr, 0, &ctx), "context") &&
              ok(cgc_engine_find_graph(engine, "train", &graph), "find graph 'train'") &&
              writeBatch(engine, ctx, o.rank, stream);
  float ms = 0, loss = 0;
  uint64_t hash = 0;
  if (good) {
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    good = ok(cgc_run(ctx, graph, nullptr, 0, stream), "warm-up step");
    cudaEventRecord(start, stream);
    for (int s = 1; good && s < o.steps; ++s)
      good = ok(cgc_run(ctx, graph, nullptr, 0, stream), "step");
    cudaEventRecord(stop, stream);
    good = good && ok(cgc_stream_synchronize(stream), "synchronize") &&
           ok(cgc_context_read_output(ctx, "loss", &loss, sizeof loss, stream), "loss") &&
           parameterHash(engine, hash);
    cudaEventElapsedTime(&ms, start, stop);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  if (good)
    std::printf("train_ranks: rank %d of %d: %d steps, %.1f us/step, loss %.6g, "
                "parameters %016llx\n",
                o.rank, o.world, o.steps, o.steps > 1 ? 1000.0 * ms / (o.steps - 1) : 0.0,
                double(loss), static_cast<unsigned long long>(hash));
  cgc_context_destroy(ctx);
  cgc_engine_destroy(engine);
  cudaStreamDestroy(stream);
  return good ? 0 : 1;
}
