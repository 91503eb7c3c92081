#!/usr/bin/env python3
"""Many processes, one GPU (issue 19, item 5): N client processes each run
ResNet-50 at batch 1 in a loop, through one jitd daemon, or as N separate
JAX (jit, XLA:GPU, preallocation off) or PyTorch (eager) processes.

  python3 bench/gpu/many_clients.py --runtime jitd|torch|jax --clients N
      [--seconds S] [--socket SOCK --daemon-pid PID] [--model FILE]
      [--kill-one] [--json OUT.json]

Each worker is its own process (its own CUDA context for torch and JAX),
sets up (connect and compile / build the network, weights on the GPU) and
warms up; then all start together and run for S seconds. A call is the
whole round trip of the user's work: a host ndarray input in, both results
(the 1x2048x7x7 features and the 1x2048x1x1 average pool) back as host
arrays. Each worker's input is its own (seeded by its index), and every
result is compared with that worker's first one: a result that differs is
counted wrong (bit-exact for jitd and JAX; torch's cuDNN may pick other
algorithms, so allclose there).

Printed (and written to --json): per runtime and N, the aggregate calls/s,
per-client p50 / p99 latency (the median over clients, and the worst),
fairness (min/max calls per client), wrong results, GPU memory in use
(nvidia-smi, sampled mid-run, minus what was in use before the workers
started) and host memory (the workers' RSS, plus the daemon's for jitd).
--kill-one SIGKILLs worker 0 a third of the way into the run; the others'
results must stay right and the run goes on (its share is then left out of
the fairness figure).

The networks: jitd runs --model (default ../shared/models/jax_resnet_50.mlir,
its elided weights filled on the GPU, seed 0). torch and JAX build the same
ResNet-50 v1.5 (NCHW, stride in the 3x3 convolution, no classifier head)
with random weights; inference batch norm is a per-channel scale and shift
(what XLA folds the model's batch-norm constants into).
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))


# ------------------------------------------------------------------ workers

def jitd_worker(args):
    import numpy as np
    import jitd
    client = jitd.Client(platform=args.device, socket_path=args.socket, autostart=False)
    with open(args.model) as f:
        exe = client.compile_stablehlo(f.read())
    x = np.random.default_rng(args.index).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)
    return (lambda: exe.Execute([x], resource_seed=0)), (lambda a, b: np.array_equal(a, b))


def torch_worker(args):
    import numpy as np
    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = True  # as jitd's and XLA's default precision
    torch.backends.cudnn.allow_tf32 = True
    g = torch.Generator().manual_seed(1)
    dev = args.device

    def weight(cout, cin, k):
        return (torch.randn(cout, cin, k, k, generator=g) * (2.0 / (cin * k * k)) ** 0.5).to(dev)

    def affine(c):
        return (torch.rand(c, generator=g).add(0.5).view(1, c, 1, 1).to(dev),
                torch.rand(c, generator=g).sub(0.5).mul(0.2).view(1, c, 1, 1).to(dev))

    stem = (weight(64, 3, 7), affine(64))
    blocks, cin = [], 64
    for mid, count, stride in STAGES:
        for i in range(count):
            s = stride if i == 0 else 1
            short = (weight(mid * 4, cin, 1), affine(mid * 4)) if (s != 1 or cin != mid * 4) else None
            blocks.append((s, weight(mid, cin, 1), affine(mid), weight(mid, mid, 3), affine(mid),
                           weight(mid * 4, mid, 1), affine(mid * 4), short))
            cin = mid * 4

    def bn(y, p):
        return y * p[0] + p[1]

    @torch.inference_mode()
    def net(x):
        y = F.relu(bn(F.conv2d(x, stem[0], stride=2, padding=3), stem[1]))
        y = F.max_pool2d(y, 3, stride=2, padding=1)
        for s, w1, a1, w2, a2, w3, a3, short in blocks:
            r = y if short is None else bn(F.conv2d(y, short[0], stride=s), short[1])
            z = F.relu(bn(F.conv2d(y, w1), a1))
            z = F.relu(bn(F.conv2d(z, w2, stride=s, padding=1), a2))
            y = F.relu(bn(F.conv2d(z, w3), a3) + r)
        return y.cpu().numpy(), y.mean((2, 3), keepdim=True).cpu().numpy()

    x = torch.from_numpy(np.random.default_rng(args.index).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32))
    return (lambda: net(x.to(dev))), (lambda a, b: np.allclose(a, b, rtol=1e-3, atol=1e-3))


def jax_worker(args):
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax import lax
    rng = np.random.default_rng(1)

    def weight(cout, cin, k):
        return jnp.asarray(rng.standard_normal((cout, cin, k, k), dtype=np.float32) * (2.0 / (cin * k * k)) ** 0.5)

    def affine(c):
        return (jnp.asarray(rng.uniform(0.5, 1.5, (1, c, 1, 1)).astype(np.float32)),
                jnp.asarray(rng.uniform(-0.1, 0.1, (1, c, 1, 1)).astype(np.float32)))

    params = {"stem": (weight(64, 3, 7), affine(64)), "blocks": []}
    strides, cin = [], 64
    for mid, count, stride in STAGES:
        for i in range(count):
            s = stride if i == 0 else 1
            short = (weight(mid * 4, cin, 1), affine(mid * 4)) if (s != 1 or cin != mid * 4) else None
            params["blocks"].append((weight(mid, cin, 1), affine(mid), weight(mid, mid, 3), affine(mid),
                                     weight(mid * 4, mid, 1), affine(mid * 4), short))
            strides.append(s)
            cin = mid * 4

    def conv(x, w, stride=1, pad=0):
        return lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad), (pad, pad)],
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))

    def bn(y, p):
        return y * p[0] + p[1]

    @jax.jit
    def net(params, x):
        y = jax.nn.relu(bn(conv(x, params["stem"][0], 2, 3), params["stem"][1]))
        y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2),
                              [(0, 0), (0, 0), (1, 1), (1, 1)])
        for s, (w1, a1, w2, a2, w3, a3, short) in zip(strides, params["blocks"]):
            r = y if short is None else bn(conv(y, short[0], s), short[1])
            z = jax.nn.relu(bn(conv(y, w1), a1))
            z = jax.nn.relu(bn(conv(z, w2, s, 1), a2))
            y = jax.nn.relu(bn(conv(z, w3), a3) + r)
        return y, jnp.mean(y, axis=(2, 3), keepdims=True)

    x = np.random.default_rng(args.index).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)

    def call():
        y, pool = net(params, x)
        return np.asarray(y), np.asarray(pool)
    return call, (lambda a, b: np.array_equal(a, b))


def worker(args):
    setup = {"jitd": jitd_worker, "torch": torch_worker, "jax": jax_worker}[args.runtime]
    call, same = setup(args)
    first = call()
    for _ in range(args.warmup):
        call()
    print("ready", flush=True)
    go = sys.stdin.readline().split()
    end = float(go[1])
    times, wrong, error = [], 0, None
    try:
        while time.time() < end:
            t = time.perf_counter()
            out = call()
            times.append(time.perf_counter() - t)
            if not all(same(a, b) for a, b in zip(out, first)):
                wrong += 1
    except Exception as e:  # reported, not raised: the harness counts it
        error = "%s: %s" % (type(e).__name__, e)
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1e3 if times else None
    print(json.dumps({"index": args.index, "calls": len(times), "wrong": wrong, "error": error,
                      "p50_ms": pick(0.5), "p99_ms": pick(0.99)}), flush=True)


# ------------------------------------------------------------------ harness

def gpu_memory_mib():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout
        return sum(int(v) for v in out.split())
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def rss_mib(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024.0


def harness(args):
    before = gpu_memory_mib()
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--runtime", args.runtime,
           "--model", args.model, "--warmup", str(args.warmup), "--device", args.device]
    if args.socket:
        cmd += ["--socket", args.socket]
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    procs = [subprocess.Popen(cmd + ["--index", str(i)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env) for i in range(args.clients)]
    t0 = time.time()
    failed = []
    for i, p in enumerate(procs):
        line = p.stdout.readline().strip()
        if line != "ready":
            failed.append(i)
    setup_s = time.time() - t0
    if failed:
        for p in procs:
            p.kill()
        result = {"runtime": args.runtime, "clients": args.clients, "error": "workers %s did not start" % failed}
        print(json.dumps(result), flush=True)
        return 1
    end = time.time() + 0.2 + args.seconds
    for p in procs:
        p.stdin.write("go %.6f\n" % end)
        p.stdin.flush()
    time.sleep(args.seconds / 3)
    killed = None
    if args.kill_one:
        procs[0].send_signal(signal.SIGKILL)
        killed = 0
    time.sleep(max(0.0, args.seconds / 2 - args.seconds / 3))
    gpu = gpu_memory_mib()
    host = rss_mib([p.pid for p in procs] + ([args.daemon_pid] if args.daemon_pid else []))
    reports = []
    for i, p in enumerate(procs):
        out, _ = p.communicate(timeout=max(30, args.seconds * 4))
        if i == killed:
            continue
        try:
            reports.append(json.loads(out.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            reports.append({"index": i, "calls": 0, "wrong": 0, "error": "no report (exit %s)" % p.returncode})
    calls = [r["calls"] for r in reports]
    p50s = [r["p50_ms"] for r in reports if r.get("p50_ms") is not None]
    p99s = [r["p99_ms"] for r in reports if r.get("p99_ms") is not None]
    result = {
        "runtime": args.runtime, "clients": args.clients, "seconds": args.seconds, "setup_s": round(setup_s, 1),
        "killed_worker": killed,
        "calls_per_s": round(sum(calls) / args.seconds, 1),
        "p50_ms_median": round(statistics.median(p50s), 2) if p50s else None,
        "p50_ms_worst": round(max(p50s), 2) if p50s else None,
        "p99_ms_median": round(statistics.median(p99s), 2) if p99s else None,
        "p99_ms_worst": round(max(p99s), 2) if p99s else None,
        "min_max_share": round(min(calls) / max(calls), 3) if calls and max(calls) else None,
        "wrong": sum(r["wrong"] for r in reports),
        "errors": [r["error"] for r in reports if r.get("error")],
        "gpu_mib_before": before, "gpu_mib_during": gpu,
        "gpu_mib_used": (gpu - before) if gpu is not None and before is not None else None,
        "host_rss_mib": round(host),
    }
    print(json.dumps(result), flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")
    return 0 if not result["errors"] and result["wrong"] == 0 else 1


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime", choices=["jitd", "torch", "jax"], required=True)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", default="cuda", help="jitd's device / torch's (cpu: try it out here)")
    parser.add_argument("--socket")
    parser.add_argument("--daemon-pid", type=int)
    parser.add_argument("--model", default=os.path.join(here, "../../../shared/models/jax_resnet_50.mlir"))
    parser.add_argument("--kill-one", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.clients < 1 or args.seconds <= 0:
        parser.error("--clients must be >= 1 and --seconds > 0")
    if args.worker:
        worker(args)
        return 0
    return harness(args)


if __name__ == "__main__":
    sys.exit(main())
