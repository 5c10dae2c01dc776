"""PyTorch's side of bench/product_search.cpp: F.linear on the same shapes,
48 products on distinct weights in one torch.cuda.graph, replayed back to
back (median of 5 after warm-up), microseconds per product. Shapes are
product_search's M,N,K: M output features, N tokens, K input features."""
import sys

import torch

LAUNCHES, REPEATS = 48, 5


def time_linear(m, n, k):
    x = torch.zeros(n, k, device="cuda", dtype=torch.bfloat16)
    weights = [torch.zeros(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(LAUNCHES)]
    bias = torch.zeros(m, device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for w in weights[:3]:
            torch.nn.functional.linear(x, w, bias)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for w in weights:
            torch.nn.functional.linear(x, w, bias)
    for _ in range(2):
        graph.replay()
    times = []
    for _ in range(REPEATS):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return 1000 * sorted(times)[REPEATS // 2] / LAUNCHES


def main():
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for spec in sys.argv[1:]:
        m, n, k = (int(v) for v in spec.split(","))
        print(f"torch F.linear M={m} N={n} K={k} bf16: {time_linear(m, n, k):.2f} us")


if __name__ == "__main__":
    main()
