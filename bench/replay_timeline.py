#!/usr/bin/env python3
"""One graph replay's timeline from an Nsight Systems GPU trace.

Usage: replay_timeline.py TRACE.csv FIRST_KERNEL [REPLAY]

TRACE.csv is `nsys stats -r cuda_gpu_trace -f csv` of a run profiled with
`--cuda-graph-trace=node` (each kernel and copy of a replay is a row).
FIRST_KERNEL is the name of the first kernel of every replay; the replay
printed is the REPLAY-th (default: the middle one of those seen before
the first gap of over 1 ms, so warm graph replays, not the eager run
after them). Prints each row from that kernel up to the next replay's
first kernel: its start after the replay's start, duration and name, then
the span and the GPU time the rows cover.
"""
import csv, sys


def rows(path):
    with open(path) as f:
        lines = [l for l in f if l.strip()]
    start = next(i for i, l in enumerate(lines) if l.startswith('"Start') or l.startswith("Start"))
    for r in csv.DictReader(lines[start:]):
        yield int(float(r["Start (ns)"])), int(float(r["Duration (ns)"])), r["Name"]


def main():
    path, first = sys.argv[1], sys.argv[2]
    trace = sorted(rows(path))
    starts = [i for i, (_, _, name) in enumerate(trace) if name == first]
    warm = [starts[0]]
    for i in starts[1:]:
        if trace[i][0] - trace[warm[-1]][0] > 1_000_000:
            break
        warm.append(i)
    k = int(sys.argv[3]) if len(sys.argv) > 3 else len(warm) // 2
    begin, end = warm[k], warm[k + 1]
    t0 = trace[begin][0]
    busy = 0
    for t, d, name in trace[begin:end]:
        busy += d
        print(f"{(t - t0) / 1000:8.2f} us  {d / 1000:7.2f} us  {name[:90]}")
    span = (trace[end][0] - t0) / 1000
    print(f"replay {k} of {len(warm)}: {end - begin} rows, span {span:.2f} us, "
          f"GPU busy {busy / 1000:.2f} us, idle {span - busy / 1000:.2f} us")


if __name__ == "__main__":
    main()
