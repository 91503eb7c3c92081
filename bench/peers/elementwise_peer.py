#!/usr/bin/python3
"""Peers for bench/cpu_bench.cc: the same work in numpy and torch (eager).

  y = tanh(a*x + b) * c over 16M f32   (elementwise/threads:N)
  sum of 16M f32                       (reduce_sum/threads:N)
  a = b + s*c over 16M f32             (triad/threads:N)
  8 row sums of 8x2M f32               (reduce_sum_rows/threads:N)
  sort of 1M f32; 1M f32 keys + i32    (sort/f32, sort/kv: stable sorts)

Run with Debian's python (numpy 1.24, torch 1.13):
  /usr/bin/python3 bench/peers/elementwise_peer.py [--repeats 15]
Prints the median milliseconds per call and the bytes/s (read + written),
one line per (framework, work, threads). numpy runs on one thread (its
elementwise ufuncs are single-threaded); torch with torch.set_num_threads.
"""
import argparse
import statistics
import time

import numpy as np

N = 1 << 24


def median_ms(fn, repeats):
    fn()  # warm up (allocations, page faults of the output)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def report(name, ms, nbytes):
    print(f"{name:40s} {ms:9.2f} ms  {nbytes / ms / 1e6:7.2f} GB/s", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, N).astype(np.float32)
    c2 = rng.uniform(-1, 1, N).astype(np.float32)
    a, b, c, s = np.float32(0.5), np.float32(0.25), np.float32(2.0), np.float32(3.0)

    out = np.empty_like(x)

    def np_chain():
        return np.tanh(a * x + b) * c

    def np_chain_inplace():
        np.multiply(x, a, out=out)
        np.add(out, b, out=out)
        np.tanh(out, out=out)
        np.multiply(out, c, out=out)

    report("numpy elementwise threads:1", median_ms(np_chain, args.repeats), N * 8)
    report("numpy elementwise (in place) threads:1", median_ms(np_chain_inplace, args.repeats), N * 8)
    report("numpy reduce_sum threads:1", median_ms(lambda: x.sum(), args.repeats), N * 4)
    report("numpy triad threads:1", median_ms(lambda: np.add(c2, s * x, out=out), args.repeats), N * 12)
    rows = x.reshape(8, N // 8)
    report("numpy reduce_sum_rows threads:1", median_ms(lambda: rows.sum(axis=1), args.repeats), N * 4)
    keys = rng.uniform(-1, 1, 1 << 20).astype(np.float32)
    values = np.arange(1 << 20, dtype=np.int32)

    def np_kv():
        order = np.argsort(keys, kind="stable")
        return keys[order], values[order]

    report("numpy sort/f32 (stable) threads:1", median_ms(lambda: np.sort(keys, kind="stable"), args.repeats),
           (1 << 20) * 8)
    report("numpy sort/kv (stable) threads:1", median_ms(np_kv, args.repeats), (1 << 20) * 16)

    try:
        import torch
    except ImportError:
        print("torch: not installed")
        return
    tx = torch.from_numpy(x)
    tc = torch.from_numpy(c2)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        report(f"torch elementwise threads:{threads}",
               median_ms(lambda: torch.tanh(tx * 0.5 + 0.25) * 2.0, args.repeats), N * 8)
        report(f"torch reduce_sum threads:{threads}", median_ms(lambda: tx.sum(), args.repeats), N * 4)
        report(f"torch triad threads:{threads}", median_ms(lambda: tc + 3.0 * tx, args.repeats), N * 12)
        trows = tx.reshape(8, N // 8)
        report(f"torch reduce_sum_rows threads:{threads}", median_ms(lambda: trows.sum(dim=1), args.repeats),
               N * 4)
    tkeys = torch.from_numpy(keys)
    tvalues = torch.from_numpy(values)

    def torch_kv():
        sorted_keys, order = torch.sort(tkeys, stable=True)
        return sorted_keys, tvalues[order]

    torch.set_num_threads(1)
    report("torch sort/f32 (stable) threads:1", median_ms(lambda: torch.sort(tkeys, stable=True), args.repeats),
           (1 << 20) * 8)
    report("torch sort/kv (stable) threads:1", median_ms(torch_kv, args.repeats), (1 << 20) * 16)


if __name__ == "__main__":
    main()
