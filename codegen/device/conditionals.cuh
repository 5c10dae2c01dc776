// The setter kernels of conditional graph nodes (ControlFlowLowering.cpp),
// in programs with control flow; they follow prelude.cuh. NVRTC 13.0 does
// not declare cudaGraphSetConditional; the driver resolves the declaration
// below when the module loads.
extern "C" __device__ void cudaGraphSetConditional(unsigned long long handle, unsigned value);
extern "C" __global__ void cgc_set_if(const unsigned char *pred, unsigned invert,
                                      unsigned long long handle) {
  cgc_wait_for_producers();
  cudaGraphSetConditional(handle, (*pred != 0) != (invert != 0));
}
extern "C" __global__ void cgc_set_while(const unsigned char *pred, unsigned *trips,
                                         unsigned bound, unsigned long long handle) {
  cgc_wait_for_producers();
  unsigned go = *pred != 0 && *trips < bound;
  *trips += go;
  cudaGraphSetConditional(handle, go);
}
