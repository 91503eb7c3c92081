#!/usr/bin/python3
"""What a replicated execute costs per call from Python (issue 17), against
a one-replica Execute of the same size in the same run.

One `jitd serve` (--no-disk-cache) on a temporary socket; the programs take
an f32[N] (N = --elements):
  per_replica   exe.ExecutePerReplica([[x], [x]]) of a 2-replica all_reduce
                (sum over replicas 0 and 1): numpy in, numpy out, the
                ctypes path (replicated calls never take jitd._fast);
  daemon        that call's daemon-side time (last_timing total_micros:
                request taken -> reply built, both processes' threads
                started, met and joined inside);
  one_fast      exe.Execute([x]) of the one-replica program (an add of x
                to itself), with jitd._fast when it is built;
  one_ctypes    the same without the extension.
Every call is timed on its own (perf_counter_ns); medians pool all rounds'
calls; rounds interleave the variants so that load from other processes
falls on each alike.

Run from the repository root after building jitd, jitd_c_api and
jitd_python_fast:
  /usr/bin/python3 bench/peers/python_replicas_peer.py [--rounds 5]
      [--calls 300] [--elements 4] [--device cpu] [--build build] [--json]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

REPLICATED = """func.func public @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %s = "stablehlo.all_reduce"(%x) ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %t = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %t : tensor<f32>
  }}) {{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}} : (tensor<{n}xf32>) -> tensor<{n}xf32>
  return %s : tensor<{n}xf32>
}}
"""

SINGLE = """func.func public @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %s = stablehlo.add %x, %x : tensor<{n}xf32>
  return %s : tensor<{n}xf32>
}}
"""


def start_daemon(build):
    tmp = tempfile.mkdtemp(prefix="jitd_replicas_peer_")
    socket_path = os.path.join(tmp, "jitd.sock")
    proc = subprocess.Popen([os.path.join(build, "bin", "jitd"), "serve", "--socket",
                             socket_path, "--no-disk-cache", "--log-level", "error"])
    deadline = time.time() + 30
    while not os.path.exists(socket_path):
        if proc.poll() is not None or time.time() > deadline:
            raise SystemExit("jitd serve did not come up")
        time.sleep(0.02)
    return proc, tmp, socket_path


def timed(fn, calls):
    out = []
    for _ in range(calls):
        t = time.perf_counter_ns()
        fn()
        out.append(time.perf_counter_ns() - t)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--elements", type=int, default=4)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    proc, tmp, socket_path = start_daemon(build)
    try:
        os.environ["JITD_SOCKET"] = socket_path
        os.environ["JITD_NO_AUTOSTART"] = "1"
        os.environ.setdefault("JITD_LIBRARY", os.path.join(build, "lib", "libjitd.so"))
        fast_so = os.path.join(build, "lib", "python", "jitd", "_fast.so")
        if os.path.exists(fast_so):
            os.environ.setdefault("JITD_PYTHON_FAST", fast_so)
        sys.path.insert(0, os.path.join(REPO, "libclient", "python"))
        import jitd
        from jitd import _fastpath

        client = jitd.get_client(args.device)
        n = args.elements
        options = jitd.CompileOptions()
        options.replica_count = 2
        replicated = client.compile_stablehlo(REPLICATED.format(n=n), compile_options=options)
        single = client.compile_stablehlo(SINGLE.format(n=n))
        x = np.arange(n, dtype=np.float32)
        want = [x + x, x + x]
        got = replicated.ExecutePerReplica([[x], [x]])
        assert all(np.array_equal(g, w) for g, w in zip(got, want)), got
        assert np.array_equal(single.Execute([x]), x + x)
        fast = single._fast

        times = {"per_replica": [], "daemon": [], "one_fast": [], "one_ctypes": []}
        for _ in range(args.rounds):
            for _ in range(args.calls):
                t = time.perf_counter_ns()
                replicated.ExecutePerReplica([[x], [x]])
                times["per_replica"].append(time.perf_counter_ns() - t)
                times["daemon"].append(replicated.last_timing["total_micros"] * 1000)
            if fast is not None:
                times["one_fast"] += timed(lambda: single.Execute([x]), args.calls)
            single._fast = None
            times["one_ctypes"] += timed(lambda: single.Execute([x]), args.calls)
            single._fast = fast
        medians = {k: statistics.median(v) / 1000.0 for k, v in times.items() if v}
        result = {"device": args.device, "elements": n, "calls": args.rounds * args.calls,
                  "fast_path": _fastpath.module() is not None, "median_us": medians}
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print("device %s, f32[%d], %d calls per variant (medians):"
                  % (args.device, n, args.rounds * args.calls))
            for k, v in medians.items():
                print("  %-12s %8.1f us" % (k, v))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
