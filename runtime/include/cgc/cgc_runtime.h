/*===- cgc_runtime.h - C ABI of the cgc runtime -------------------*- C -*-===//
 *
 * Loads a compiled .cgc artifact and replays its CUDA graphs. The runtime
 * loads the CUDA driver (libcuda.so.1) lazily, so programs linking it start
 * on machines without a GPU; every call then fails with CGC_ERROR_NO_DEVICE.
 *
 * Objects:
 *  - cgc_engine: one loaded artifact on one device: device code, the
 *    persistent region (weights, optimizer and RNG state). Immutable after
 *    load except through cgc_engine_state_write / cgc_engine_set_rng_seed.
 *  - cgc_context: one execution context on an engine: owns (or borrows) an
 *    arena for activations and holds the instantiated graphs. Contexts of
 *    one engine share weights and state.
 *
 * Thread safety:
 *  - Functions on different contexts may run concurrently from different
 *    threads, including cgc_run on contexts of the same engine.
 *  - One context must not be used by two threads at once (a CUDA graph exec
 *    runs one launch at a time and its parameters are not synchronized).
 *  - cgc_engine_state_write / cgc_engine_set_rng_seed must not race with runs
 *    that read that state; they are synchronous (they return after the copy).
 *  - The last-error string is thread-local.
 *
 * CUDA context: the runtime uses the device's primary context (like the CUDA
 * runtime API) and makes it current on the calling thread when needed.
 *
 * cgc_run and cgc_run_eager allocate nothing and print nothing; cgc_run
 * only enqueues work on the caller's stream (cgc_run_eager synchronizes at
 * each conditional decision).
 *===----------------------------------------------------------------------===*/
#ifndef CGC_RUNTIME_H
#define CGC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on every incompatible change of this header. */
#define CGC_ABI_VERSION 2

typedef enum cgc_status {
  CGC_OK = 0,
  CGC_ERROR_INVALID_ARGUMENT = 1,
  CGC_ERROR_NO_DEVICE = 2,       /* no driver, no GPU, or driver too old */
  CGC_ERROR_INVALID_ARTIFACT = 3,/* malformed or corrupt .cgc */
  CGC_ERROR_UNSUPPORTED = 4,     /* e.g. no device code for this GPU, no
                                    cuBLASLt or cuDNN for an artifact that
                                    needs it, no cuDNN engine for a
                                    convolution */
  CGC_ERROR_OUT_OF_MEMORY = 5,
  CGC_ERROR_NOT_FOUND = 6,       /* unknown tensor or graph name */
  CGC_ERROR_DRIVER = 7,          /* a CUDA driver call failed */
  CGC_ERROR_IO = 8,
  CGC_ERROR_COLLECTIVE = 9       /* the ranks of a data-parallel run disagree,
                                    or one failed or stalled: the engine's
                                    communicator is aborted */
} cgc_status;

typedef enum cgc_dtype {
  CGC_DTYPE_F32 = 0,
  CGC_DTYPE_F16 = 1,
  CGC_DTYPE_BF16 = 2,
  CGC_DTYPE_I32 = 3,
  CGC_DTYPE_I64 = 4,
  CGC_DTYPE_BOOL = 5 /* one byte per element */
} cgc_dtype;

typedef enum cgc_tensor_role {
  CGC_ROLE_INPUT = 0,
  CGC_ROLE_OUTPUT = 1,
  CGC_ROLE_STATE = 2
} cgc_tensor_role;

/* DLPack-like view of a device tensor. Strides are in elements (row-major).
 * shape/strides stay valid until the owning context (or engine) is destroyed
 * and are updated in place by cgc_run (real output shapes). */
typedef struct cgc_tensor {
  void *data;
  int32_t dtype; /* cgc_dtype */
  int32_t ndim;
  const int64_t *shape;
  const int64_t *strides;
} cgc_tensor;

/* Static description of an artifact tensor (maximum shape). */
typedef struct cgc_tensor_info {
  const char *name;
  const char *kind; /* "user_input", "dim_size" (a padded artifact's real
                     * dim, written by cgc_run), "parameter", "output", ... */
  int32_t dtype;
  int32_t ndim;
  const int64_t *shape;
  size_t bytes;
} cgc_tensor_info;

/* What a context has done with the driver since it was created: graph
 * objects made, captures, node updates, and per-run work (see
 * cgc_context_counters). */
typedef struct cgc_counters {
  uint64_t graphs_created;      /* cuGraphCreate: one per top-level graph */
  uint64_t graphs_instantiated; /* cuGraphInstantiate */
  uint64_t captures;            /* stream captures of cuBLASLt and cuDNN
                                   calls */
  uint64_t node_updates;        /* cuGraphExec*SetParams (cgc_context_bind) */
  uint64_t launches;            /* cuGraphLaunch (cgc_run) */
  uint64_t dim_writes;          /* runs that wrote new real dims first */
} cgc_counters;

typedef struct cgc_engine_s *cgc_engine;
typedef struct cgc_context_s *cgc_context;

int cgc_abi_version(void);
/* Static text for a status code. */
const char *cgc_status_message(cgc_status status);
/* Detailed message of the last failure on this thread ("" if none). */
const char *cgc_last_error(void);

/* Number of CUDA devices; CGC_ERROR_NO_DEVICE with a reason when none. */
cgc_status cgc_device_count(int *count);

/* Resets `device`'s primary CUDA context (cuDevicePrimaryCtxReset): how a
 * process recovers from a sticky CUDA error (an illegal address, a device
 * trap), after which every call on the device fails with CGC_ERROR_DRIVER.
 * Destroy every engine and context on the device first; everything else
 * the process holds there (PyTorch's memory included) is gone after it.
 * Engines loaded after it run normally. */
cgc_status cgc_device_reset(int device);

/* Loading. The memory image is copied; the caller may free it afterwards.
 * An artifact that keeps its weights beside it (docs/artifact.md, "Weights
 * beside the artifact") reads them at load: cgc_engine_load_file from the
 * file its manifest names, relative to the artifact's folder;
 * cgc_engine_load_memory_weights from `weights_path` (the file itself);
 * cgc_engine_load_memory refuses such an artifact (CGC_ERROR_INVALID_ARGUMENT).
 * The file is mapped and checked (a regular file of the recorded size and
 * content hash) before the GPU is touched: missing or unreadable gives
 * CGC_ERROR_IO, another size or hash CGC_ERROR_INVALID_ARTIFACT, each with
 * the file, the expected and the actual value in cgc_last_error(). The
 * state's limit is the device's free memory (CGC_ERROR_OUT_OF_MEMORY). */
cgc_status cgc_engine_load_file(const char *path, int device,
                                cgc_engine *engine);
cgc_status cgc_engine_load_memory(const void *data, size_t size, int device,
                                  cgc_engine *engine);
cgc_status cgc_engine_load_memory_weights(const void *data, size_t size,
                                          const char *weights_path, int device,
                                          cgc_engine *engine);
void cgc_engine_destroy(cgc_engine engine);

/* Introspection. Strings stay valid for the engine's lifetime. */
size_t cgc_engine_num_graphs(cgc_engine engine);
const char *cgc_engine_graph_name(cgc_engine engine, size_t index);
cgc_status cgc_engine_find_graph(cgc_engine engine, const char *name,
                                 size_t *index);
/* The first graph that runs these dim values (one per engine dim, in
 * order): an artifact compiled with `--bind-dim B=8,16,64` has one graph per
 * value; a padded artifact (a model with symbolic dims compiled without
 * --bind-dim) one per bucket, and the first is the smallest bucket that
 * holds every value. CGC_ERROR_NOT_FOUND, naming the graphs, when none does. */
cgc_status cgc_engine_select_graph(cgc_engine engine, const int64_t *dims,
                                   size_t n_dims, size_t *index);
size_t cgc_engine_num_tensors(cgc_engine engine, cgc_tensor_role role);
cgc_status cgc_engine_tensor_info(cgc_engine engine, cgc_tensor_role role,
                                  size_t index, cgc_tensor_info *info);
/* The engine dim (an index for cgc_engine_dim_info) that axis `axis` of a
 * tensor follows, or -1 for a static axis. */
cgc_status cgc_engine_tensor_dim(cgc_engine engine, cgc_tensor_role role,
                                 size_t index, size_t axis, int64_t *dim);
size_t cgc_engine_arena_size(cgc_engine engine);
size_t cgc_engine_num_dims(cgc_engine engine);
/* Name and range of the dims passed to cgc_run, in order. */
cgc_status cgc_engine_dim_info(cgc_engine engine, size_t index,
                               const char **name, int64_t *min, int64_t *max);
/* The extent graph `graph` is compiled for in dim `dim`: its bucket (a
 * padded graph, which runs any value up to it) or its `--bind-dim` value;
 * -1 where the graph is not specialized to the dim (it runs any value up
 * to the dim's max). A graph reads no more of an input than the input's
 * size at these extents, so a caller's input buffer of that size can be
 * bound for its runs (cgc_context_bind). */
cgc_status cgc_engine_graph_dim(cgc_engine engine, size_t graph, size_t dim,
                                int64_t *extent);

/* Matrix products: library calls that cuBLASLt runs. An artifact with
 * products loads cuBLASLt (libcublasLt.so.<the major version of the cuBLAS
 * headers the runtime is built with>, else libcublasLt.so, which must report
 * that major version) when the engine is loaded, and cgc_engine_load_* fails with
 * CGC_ERROR_UNSUPPORTED naming the library if it cannot; an artifact without
 * products never loads it. At load, cuBLASLt's heuristic offers each
 * product's algorithms on the engine's GPU (load fails, naming the product's
 * node and shape, if it finds none) and the fastest of up to 8 of them,
 * timed on scratch operands, is kept (the heuristic's first with
 * CGC_PRODUCT_TUNING=0 in the environment). The choices are remembered per
 * GPU model in the cache folder ($CGC_CACHE_DIR, else $XDG_CACHE_HOME/cgc,
 * else $HOME/.cache/cgc; not with CGC_CACHE=0), and a later load takes a
 * remembered one, checked by cuBLASLt, without timing (docs/runtime.md,
 * "Tuning memory"). Index: 0 .. cgc_engine_num_products()-1.
 */
size_t cgc_engine_num_products(cgc_engine engine);
/* One line: "product I node=NODE dtype=f32|f16|bf16[+tf32] m=M n=N k=K
 * transA=0|1 transB=0|1 batch=B epilogue=E algo=ID tile=T stages=S splitk=K
 * reduction=R swizzle=W custom=C workspace=USED/RESERVED
 * heuristic|timed|remembered|pinned" (remembered: timed by an earlier load
 * on this GPU model, docs/runtime.md)
 * (tile, stages, reduction: cuBLASLt's enum values). Writes at most size
 * bytes, NUL-terminated; a line that does not fit is written truncated and
 * the call fails with CGC_ERROR_INVALID_ARGUMENT, the last error giving the
 * size needed (512 bytes suffice unless the node name is long). */
cgc_status cgc_engine_describe_product(cgc_engine engine, size_t index,
                                       char *buffer, size_t size);
/* Copies the product's algorithm: cuBLASLt's opaque cublasLtMatmulAlgo_t
 * (64 bytes), meaningful to the same cuBLASLt version on the same GPU. */
cgc_status cgc_engine_get_product_algorithm(cgc_engine engine, size_t index,
                                            uint64_t algo[8]);
/* Makes contexts created afterwards run product `index` with `algo` (from
 * cgc_engine_get_product_algorithm, maybe of another process). Checked with
 * cublasLtMatmulAlgoCheck against the product on this GPU, and against the
 * workspace the artifact reserves: CGC_ERROR_INVALID_ARGUMENT with the
 * reason if it does not fit. Refused (CGC_ERROR_INVALID_ARGUMENT) while any
 * context of this engine exists, since those captured the previous one.
 * The check does not see operand addresses: an algorithm that needs more
 * alignment than they have fails at cgc_context_create. Must not run
 * concurrently with other calls on this engine. */
cgc_status cgc_engine_pin_product_algorithm(cgc_engine engine, size_t index,
                                            const uint64_t algo[8]);

/* Convolutions: library calls that cuDNN runs. An artifact with
 * convolutions loads cuDNN 9 (9.0 or newer) when the engine is loaded: the
 * file the environment variable CGC_CUDNN_LIBRARY names if it is set (only
 * that one), else libcudnn.so.9 through the dynamic loader (a copy the
 * process already loaded, LD_LIBRARY_PATH, RUNPATH, ld.so.cache), else
 * libcudnn.so; cgc_engine_load_* fails with CGC_ERROR_UNSUPPORTED naming
 * the library if none loads or it is not cuDNN 9. An artifact without
 * convolutions never loads it. At load, each convolution (with its
 * epilogue) becomes a cuDNN operation graph; cuDNN's heuristic offers
 * engine configurations, of which up to CGC_CONVOLUTION_CANDIDATES (default
 * 4) usable ones are kept (deterministic, no down-converted inputs, no TF32
 * for f32 unless the artifact allows it, within the workspace the artifact
 * reserves; load fails, naming the convolution's node and shape, if there
 * is none) and the fastest, timed on scratch tensors, is chosen (the first
 * with CGC_CONVOLUTION_TUNING=0 in the environment); a later load on the
 * same GPU model finalizes only the configuration remembered for it, when
 * cuDNN still offers it, as for products. Index:
 * 0 .. cgc_engine_num_convolutions()-1. */
typedef struct cgc_convolution_info {
  const char *node;            /* the IR node; valid as long as the engine */
  int64_t engine_id;           /* cuDNN's CUDNN_ATTR_ENGINE_GLOBAL_INDEX */
  uint64_t workspace_bytes;    /* what the chosen plan uses */
  uint64_t workspace_reserved; /* what the artifact reserves */
  int32_t candidates;          /* usable engine configurations found (1 when
                                  a remembered one was the only one tried) */
  int32_t timed;               /* 1: chosen by timing; 2: by an earlier load's
                                  timing, remembered; 0: the first usable */
  int32_t cudnn_version;       /* cudnnGetVersion(), e.g. 91900 */
  char tag[128];               /* "eng<id>_k<knob>=<value>...", truncated */
} cgc_convolution_info;
size_t cgc_engine_num_convolutions(cgc_engine engine);
cgc_status cgc_engine_convolution_info(cgc_engine engine, size_t index,
                                       cgc_convolution_info *out);

/* Persistent state (weights, optimizer state, RNG state), by name.
 * bytes must equal the tensor's size. Synchronous. */
cgc_status cgc_engine_state_read(cgc_engine engine, const char *name,
                                 void *host_dst, size_t bytes);
cgc_status cgc_engine_state_write(cgc_engine engine, const char *name,
                                  const void *host_src, size_t bytes);
/* The device address (and size) of persistent state `name`, for reads and
 * writes the caller orders with its runs on its own streams (a learning
 * rate written by a copy on the stream that replays the step: no host
 * synchronization). Valid as long as the engine. */
cgc_status cgc_engine_state_data(cgc_engine engine, const char *name,
                                 void **device, size_t *bytes);
/* Writes {seed, 0} into every engine state tensor of kind "rng_state" (the
 * dropout streams; per-context ones are written with
 * cgc_context_state_write); without one, does nothing and returns CGC_OK. */
cgc_status cgc_engine_set_rng_seed(cgc_engine engine, uint64_t seed);

/* Data parallelism (docs/distributed.md). An artifact compiled with
 * `cgc --train --data-parallel` has collectives: all-reduces of its
 * gradients that every rank's graph runs through NCCL, which the runtime
 * dlopens (CGC_NCCL_LIBRARY, else libnccl.so.2: NCCL 2.18 or newer). Each
 * rank (one process per GPU) loads the same artifact and joins its engine
 * to the ranks before creating a context. */
#define CGC_NCCL_UNIQUE_ID_BYTES 128
typedef struct cgc_ranks {
  /* A ncclComm_t of the NCCL library the runtime loads (the caller keeps
   * it and destroys it after the engine), or NULL: the engine then creates
   * its own from unique_id, rank and world_size. */
  void *nccl_comm;
  /* CGC_NCCL_UNIQUE_ID_BYTES bytes from cgc_nccl_unique_id on rank 0,
   * which the caller sends to every rank (torch.distributed, MPI, a file). */
  const void *unique_id;
  int rank, world_size;
  /* How long a replay may take before the engine's watchdog decides that a
   * peer died or stalled and aborts the communicator; 0: 600000 ms. */
  uint32_t timeout_ms;
} cgc_ranks;
/* The collectives of engine's artifact (0: it needs no cgc_engine_join). */
cgc_status cgc_engine_collectives(cgc_engine engine, size_t *count);
/* A fresh NCCL unique id (rank 0 makes it; out holds
 * CGC_NCCL_UNIQUE_ID_BYTES bytes). */
cgc_status cgc_nccl_unique_id(void *out, size_t size);
/* Joins engine to its ranks; collective over the ranks (every rank calls
 * it, and it returns when all have): checks that every rank loaded the
 * same artifact (its checksum, exchanged over the communicator; a
 * difference is CGC_ERROR_COLLECTIVE naming both ranks' checksums),
 * broadcasts rank 0's persistent state (parameters, optimizer state) so
 * the ranks start equal, and starts a watchdog thread that polls the
 * communicator's asynchronous error and the replay in flight (its error,
 * its age against timeout_ms). After the watchdog has aborted the
 * communicator (a caller's too: do not destroy it then) every cgc_run and
 * cgc_run_eager of the engine's contexts returns CGC_ERROR_COLLECTIVE; a
 * replay in flight then ends with undefined gradients. Once per engine,
 * before its one context (every rank creates it); synchronous. */
cgc_status cgc_engine_join(cgc_engine engine, const cgc_ranks *ranks);

/* Creates an execution context. If caller_arena is NULL the context
 * allocates the arena (arena_bytes ignored); otherwise caller_arena must be
 * a device pointer aligned to 256 bytes with arena_bytes at least
 * cgc_engine_arena_size(). Builds, instantiates and uploads every graph. */
cgc_status cgc_context_create(cgc_engine engine, void *caller_arena,
                              size_t arena_bytes, cgc_context *ctx);
void cgc_context_destroy(cgc_context ctx);

/* Per-context state: the state tensors with scope "context" in the IR (a
 * KV cache, a stream's position; manifest region "arena"), of which each
 * context holds its own copy, so that contexts of one engine run a model
 * that updates it concurrently. cgc_context_create sets each to its
 * initial value (zeros without an init); so does cgc_context_reset_state,
 * ordered on `stream`. Read and write are synchronous; bytes must equal
 * the tensor's size. cgc_context_state_data gives its device address
 * (valid as long as the context). The engine's cgc_engine_state_* refuse
 * these names, as these refuse the engine's. */
cgc_status cgc_context_state_read(cgc_context ctx, const char *name,
                                  void *host_dst, size_t bytes);
cgc_status cgc_context_state_write(cgc_context ctx, const char *name,
                                   const void *host_src, size_t bytes);
cgc_status cgc_context_state_data(cgc_context ctx, const char *name,
                                  void **device, size_t *bytes);
cgc_status cgc_context_reset_state(cgc_context ctx, void *stream);

/* Replays graph graph_index on stream (a CUstream/cudaStream_t, NULL for the
 * legacy default stream). dims holds one value per engine dim in order
 * (n_dims == 0: the values the graph is compiled for, else each dim at its
 * maximum); a graph compiled for a dim value refuses any other, and a
 * padded graph takes any value up to its bucket: the real dims go to its
 * `dim_size` inputs on the stream before the launch (only when they
 * changed since the last run of the context); inputs and outputs hold
 * their real elements packed at the front of their storage, contiguous in
 * the real shape (the graph moves those with a symbolic axis after 0 to and
 * from its padded layout itself; views report the real shapes and
 * strides). Nothing is captured,
 * instantiated or compiled. Conditional nodes (`if`, `while`) decide on
 * the device. Asynchronous. */
cgc_status cgc_run(cgc_context ctx, size_t graph_index, const int64_t *dims,
                   size_t n_dims, void *stream);
/* Same work, launched node by node in a topological order (cuLaunchKernel,
 * cublasLtMatmul, cudnnBackendExecute, ...; for debugging and
 * benchmarking). Asynchronous, except that each
 * `if` and `while` decision waits for the stream and reads its predicate on
 * the host. */
cgc_status cgc_run_eager(cgc_context ctx, size_t graph_index,
                         const int64_t *dims, size_t n_dims, void *stream);

/* Zero-copy views of the current storage of a graph input / output: the
 * context's arena slice, or the caller's pointer after cgc_context_bind.
 * Shapes are the real shapes of the last run's dims, strides contiguous. */
cgc_status cgc_context_input(cgc_context ctx, const char *name,
                             cgc_tensor *desc);
cgc_status cgc_context_output(cgc_context ctx, const char *name,
                              cgc_tensor *desc);

/* Makes every graph node that reads or writes input/output `name` use the
 * caller's device_ptr instead (kernel, memset and memcpy nodes are updated in
 * place in the instantiated graphs; a matrix product's cuBLASLt call or a
 * convolution's cuDNN call is captured again at the new address and its
 * child graph updated). device_ptr must be 16-byte aligned
 * (256 recommended) and hold the tensor's full (maximum) size, or, for an
 * input, its size at the dim extents (cgc_engine_graph_dim) of every graph
 * run while it is bound. NULL restores
 * the arena storage. As with cuGraphExec*SetParams, only later runs see the
 * change: runs already enqueued keep the old pointer, which must stay valid
 * until they finish. The `dim_size` inputs cannot be bound. */
cgc_status cgc_context_bind(cgc_context ctx, const char *name,
                            void *device_ptr);

/* Convenience copies between host memory and a named input/output's
 * current storage, ordered on stream and synchronous (they wait for it). A
 * copy may be shorter than the tensor (a padded artifact's real elements,
 * packed); the `dim_size` inputs of a padded artifact are
 * refused (cgc_run writes them). */
cgc_status cgc_context_write_input(cgc_context ctx, const char *name,
                                   const void *host_src, size_t bytes,
                                   void *stream);
cgc_status cgc_context_read_output(cgc_context ctx, const char *name,
                                   void *host_dst, size_t bytes, void *stream);
cgc_status cgc_stream_synchronize(void *stream);
/* Copies `bytes` of device memory at device_src to the front of input
 * `name`'s current storage (an input smaller than the bucket its graph
 * reads, packed: the caller's tensor cannot be bound since the graph reads
 * the whole bucket), ordered on stream and asynchronous: device_src must
 * stay valid until the copy ran. The current storage is the arena slice,
 * or, while `name` is bound, the caller's own memory, which the copy
 * overwrites (cgc_context_bind(ctx, name, NULL) first to copy into the
 * slice). Allocates nothing; outputs and the `dim_size` inputs are
 * refused. */
cgc_status cgc_context_copy_input(cgc_context ctx, const char *name,
                                  const void *device_src, size_t bytes,
                                  void *stream);

/* How many bodies the `while` named loop (its IR node name) ran in the last
 * run of ctx on stream (graph replay or eager), read from its device trip
 * counter, ordered on stream and synchronous. A loop inside an `if` arm
 * that the last run did not take keeps the count of an earlier run. */
cgc_status cgc_context_loop_trips(cgc_context ctx, const char *loop,
                                  uint32_t *trips, void *stream);

/* The counts of ctx's driver work so far. A replay at any size within the
 * bounds adds a launch (and, when the dims changed, a dim write), never a
 * graph, an instantiation or a capture. */
cgc_status cgc_context_counters(cgc_context ctx, cgc_counters *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CGC_RUNTIME_H */
