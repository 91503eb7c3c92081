#!/usr/bin/python3
"""Python's per-call cost against the C client's, in one run (issue 15,
item 4: Python Execute with numpy in and out <= 15x the C client's hot round
trip).

One `jitd serve` (--no-disk-cache) on a temporary socket; the program is
an f32[4] add. Each round runs, back to back:
  c            build/bin/jitd_python_call_driver: the C API (libjitd.so)
               executing on buffers made once (the C client's hot round
               trip), each call timed in C;
  fast         exe.Execute([x, y]) with jitd._fast (numpy in, numpy out);
  call         exe(x, y), the same through __call__;
  ctypes       exe.Execute([x, y]) without the extension (the package's
               ctypes path, as before it);
  get_client   jitd.get_client(device) when memoized.
With --daemon-bench, bench/daemon_bench.cc's execute/hot (the C++ client
on a daemon of its own) runs once after the rounds, as a cross-check of
the C figure.
Every call is timed on its own (perf_counter_ns in Python, clock_gettime
in C); the medians pool all rounds' calls. ratio = median / C's median.
Rounds interleave so that load from other processes on the machine falls
on every variant alike.

Run from the repository root, after building the driver and the extension
(cmake --build build --target jitd_python_call_driver jitd_python_fast):
  /usr/bin/python3 bench/peers/python_call_peer.py [--rounds 5] [--calls 4000]
      [--device cpu] [--build build] [--daemon-bench] [--json]
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

ADD = """func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def start_daemon(jitd_bin, directory):
    socket_path = os.path.join(directory, "jitd.sock")
    proc = subprocess.Popen([jitd_bin, "serve", "--socket", socket_path, "--no-disk-cache",
                             "--log-level", "error"])
    deadline = time.time() + 60
    while not os.path.exists(socket_path):
        if proc.poll() is not None:
            sys.exit("python_call_peer: jitd serve exited with %d" % proc.returncode)
        if time.time() > deadline:
            proc.kill()
            sys.exit("python_call_peer: jitd serve did not come up on %s" % socket_path)
        time.sleep(0.02)
    return proc, socket_path


def stop_daemon(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def time_calls(fn, warmup, calls):
    """Each call's nanoseconds."""
    for _ in range(warmup):
        fn()
    clock = time.perf_counter_ns
    out = []
    for _ in range(calls):
        start = clock()
        fn()
        out.append(clock() - start)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=4000, help="timed calls per round and variant "
                        "(ctypes: a tenth of them)")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--daemon-bench", action="store_true",
                        help="also run build/bin/jitd_daemon_bench's execute/hot")
    parser.add_argument("--json", action="store_true", help="print one JSON object as well")
    args = parser.parse_args()

    build = os.path.abspath(args.build)
    jitd_bin = os.path.join(build, "bin", "jitd")
    driver = os.path.join(build, "bin", "jitd_python_call_driver")
    os.environ.setdefault("JITD_LIBRARY", os.path.join(build, "lib", "libjitd.so"))
    os.environ.setdefault("JITD_PYTHON_FAST", os.path.join(build, "lib", "python", "jitd",
                                                           "_fast.so"))
    for path in (jitd_bin, driver, os.environ["JITD_LIBRARY"]):
        if not os.path.exists(path):
            sys.exit("python_call_peer: %s is missing; build it first" % path)
    sys.path.insert(0, os.path.join(REPO, "libclient", "python"))
    import jitd  # noqa: E402 (after the environment above)
    if not jitd.fast_path_status().startswith("jitd._fast"):
        sys.exit("python_call_peer: " + jitd.fast_path_status())

    directory = tempfile.mkdtemp(prefix="jitd-python-call-")
    proc, socket_path = start_daemon(jitd_bin, directory)
    os.environ["JITD_SOCKET"] = socket_path
    try:
        client = jitd.get_client(args.device)
        if client.platform != args.device:
            sys.exit("python_call_peer: the daemon has no %s device" % args.device)
        exe = client.compile_stablehlo(ADD)
        slow = client.compile_stablehlo(ADD)
        slow._fast = None  # the ctypes path
        x = np.array([1, 2, 3, 4], np.float32)
        y = np.array([0.5, 0.5, 0.5, 0.5], np.float32)
        for got in (exe.Execute([x, y]), exe(x, y), slow.Execute([x, y])):
            np.testing.assert_array_equal(got, x + y)
        arguments = [x, y]
        variants = {
            "fast": lambda: exe.Execute(arguments),
            "call": lambda: exe(x, y),
            "ctypes": lambda: slow.Execute(arguments),
            "get_client": lambda: jitd.get_client(args.device),
        }
        samples = {name: [] for name in ["c"] + list(variants)}
        daemon_micros = []
        for _ in range(args.rounds):
            out = subprocess.run([driver, socket_path, args.device, str(args.warmup),
                                  str(args.calls)], capture_output=True, text=True, check=False)
            if out.returncode != 0:
                sys.exit("python_call_peer: the C driver failed: " + out.stderr.strip())
            samples["c"].extend(int(line) for line in out.stdout.split())
            for name, fn in variants.items():
                calls = args.calls // 10 if name == "ctypes" else args.calls
                samples[name].extend(time_calls(fn, args.warmup, calls))
            for _ in range(200):
                exe.Execute(arguments)
                daemon_micros.append(exe.last_timing["total_micros"])
    finally:
        stop_daemon(proc)
        shutil.rmtree(directory, ignore_errors=True)

    c_median = statistics.median(samples["c"])
    result = {"device": args.device, "rounds": args.rounds, "loadavg": os.getloadavg(),
              "daemon_total_us_p50": statistics.median(daemon_micros), "variants": {}}
    print("f32[4] add on %s, %d rounds; load average %.2f %.2f %.2f"
          % ((args.device, args.rounds) + os.getloadavg()))
    print("%-12s %8s %10s %10s %10s %9s" % ("variant", "calls", "p10 us", "median us", "p90 us",
                                             "x C p50"))
    for name, ns in samples.items():
        ns = sorted(ns)
        p10, p50, p90 = (ns[int(q * (len(ns) - 1))] / 1e3 for q in (0.1, 0.5, 0.9))
        ratio = statistics.median(ns) / c_median
        result["variants"][name] = {"calls": len(ns), "p10_us": p10, "median_us": p50,
                                    "p90_us": p90, "ratio_to_c": ratio}
        print("%-12s %8d %10.2f %10.2f %10.2f %9.2f" % (name, len(ns), p10, p50, p90, ratio))
    print("daemon's own time per execute (total_micros, p50): %d us"
          % result["daemon_total_us_p50"])
    if args.daemon_bench:
        bench = os.path.join(build, "bin", "jitd_daemon_bench")
        out = subprocess.run([bench, "--benchmark_filter=^execute/hot", "--benchmark_format=json"],
                             capture_output=True, text=True, check=True)
        row = json.loads(out.stdout)["benchmarks"][0]
        result["daemon_bench_execute_hot"] = {"mean_us": row["real_time"] / 1e3,
                                              "p50_us": row["p50_us"], "p99_us": row["p99_us"]}
        print("jitd_daemon_bench execute/hot (C++ client, own daemon): p50 %.2f us, mean %.2f us"
              % (row["p50_us"], row["real_time"] / 1e3))
    goal = result["variants"]["fast"]["ratio_to_c"] <= 15
    print("goal (fast Execute <= 15x the C round trip): %s" % ("met" if goal else "NOT met"))
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
