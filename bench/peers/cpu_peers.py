"""jitd's cpu device against XLA:CPU, ONNX Runtime and torch eager, side by side.

  bash scripts/venv.sh --peers            # once: jax/jaxlib/flax + onnxruntime/onnx in .venv
  bash scripts/build.sh jitd              # build/bin/jitd
  .venv/bin/python bench/peers/cpu_peers.py [--suite models|micro|cache|check|all]
        [--threads 1 2] [--rounds 5] [--repeats 11] [--models ...] [--runtimes ...]
        [--json FILE] [--xla-dump DIR]

Prints markdown tables (BENCHMARKS.md keeps them):
  models  the three shared models (../shared/models) x threads x runtime:
          execute time per inference and cold compile time, the ratio
          jitd / best peer.
            jitd         `jitd run --in-process` of the StableHLO text
                         (compile: passes + codegen + LLVM; execute: the
                         device's Execute on the .npy inputs, p50 of --repeat)
            xla          XLA:CPU (jaxlib) compiling the very same text, its
                         elided weights filled with jitd's values and passed
                         as constants (peer_worker.py, resource_fill.py)
            flax         the same network written in JAX/Flax (flax_models.py)
            ort          ONNX Runtime on models_peer.py's torch network
                         exported with torch.onnx.export (onnx_export.py)
            torch        torch eager (Debian's torch 1.13; models_peer.py), the
                         faster of its forms per round
  micro   the programs of micro_programs.py on jitd and XLA:CPU (same text,
          same inputs): time, GB/s of the bytes that must move, GFLOP/s.
  cache   jitd's compile cache: a cold compile in a daemon, then a memory
          hit, then a disk hit after a restart (`jitd serve`), per model.
  check   jitd's results against XLA:CPU's for each model and micro
          program (the same work: the fill reproduction included).

Fairness: each round runs every runtime once, in a rotated order
(interleaved), each in a fresh process that compiles, runs --warmup untimed
calls and --repeats timed ones; a cell is the median over rounds of each
round's median. Threads: jitd JITD_CPU_THREADS=N; XLA:CPU its default pool;
ORT intra_op_num_threads=N; torch set_num_threads(N); OpenBLAS (jitd's and
torch's GEMMs) OPENBLAS_NUM_THREADS=N. With N = 1 every runtime's process is
also pinned to one CPU (taskset -c --pin-cpu): XLA:CPU and ORT size their
pools by the CPUs they may use, so this is what holds them to one core.
The machine's load average is sampled before every run and printed.
"""
import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

PEERS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(PEERS))
sys.path.insert(0, PEERS)
import micro_programs  # noqa: E402
import resource_fill  # noqa: E402

SHARED = os.environ.get("JITD_SHARED_DIR", os.path.join(os.path.dirname(REPO), "shared"))
MODELS = ["pt_bert", "jax_resnet_50", "searchless_chess_9m"]
MODEL_RUNTIMES = ["jitd", "xla", "flax", "ort", "torch"]
TITLES = {"jitd": "jitd", "jitd-daemon": "jitd (daemon round trip)", "xla": "XLA:CPU (StableHLO)",
          "xla-args": "XLA:CPU (weights as args)", "flax": "XLA:CPU (Flax)", "ort": "ONNX Runtime",
          "torch": "torch eager"}
DEBIAN_PYTHON = "/usr/bin/python3"


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def lower_median(values):
    """The p50 jitd run --repeat prints: sorted[int(0.5 * (n - 1))]."""
    v = sorted(values)
    return v[int(0.5 * (len(v) - 1))]


def parse_duration(text):
    """'8.00 us' / '12.3 ms' / '1.20 s' (base/duration_text.h) -> ms."""
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(us|ms|s|µs)\s*", text)
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    value, unit = float(m.group(1)), m.group(2)
    return value * {"us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}[unit]


# ---------------------------------------------------------------- inputs

def main_signature(text):
    line = next(l for l in text.split("\n") if "@main(" in l)
    args = line[line.index("@main(") + 6:line.index(") ->") if ") ->" in line else None]
    return re.findall(r"%[\w.]+: tensor<([^>]*)>", args)


def parse_tensor(spec):
    parts = spec.split("x")
    return tuple(int(p) for p in parts[:-1]), parts[-1]


def model_inputs(name, text):
    """Arguments of a model's @main: floats (weights) as jitd's weights fill
    (resource_fill.random_literal, seed 100 + i), integers by what they are
    (BERT: positions 0..511, token ids in the vocabulary, token types 0,
    mask 1; chess: tokens in the vocabulary)."""
    rng = np.random.default_rng(0)
    out = []
    for i, spec in enumerate(main_signature(text)):
        shape, dtype = parse_tensor(spec)
        if dtype == "f32":
            if name == "jax_resnet_50":
                out.append(resource_fill.random_literal(shape, np.float32, 100 + i, "uniform"))
            else:
                out.append(resource_fill.random_literal(shape, np.float32, 100 + i, "weights"))
        elif name == "pt_bert":
            kind = {199: "positions", 200: "ids", 201: "types", 202: "mask"}[i]
            if kind == "positions":
                out.append(np.arange(shape[1], dtype=np.int32).reshape(shape))
            elif kind == "ids":
                out.append(rng.integers(0, 30522, shape, dtype=np.int32))
            elif kind == "types":
                out.append(np.zeros(shape, np.int32))
            else:
                out.append(np.ones(shape, np.int32))
        elif name == "searchless_chess_9m":
            out.append(rng.integers(0, 1968, shape, dtype=np.int32))
        else:
            raise ValueError(f"{name}: no rule for argument {i} ({spec})")
    return out


def write_inputs(directory, arrays):
    stamp = os.path.join(directory, "done")
    if os.path.exists(stamp):
        return
    os.makedirs(directory, exist_ok=True)
    for i, a in enumerate(arrays):
        np.save(os.path.join(directory, f"arg_{i}.npy"), a)
    with open(stamp, "w") as f:
        f.write(str(len(arrays)))


class Data:
    """The data folder: inputs as .npy, micro programs, ONNX exports, XLA's
    filled modules."""

    def __init__(self, root):
        self.root = root
        os.makedirs(root, exist_ok=True)

    def model(self, name):
        program = os.path.join(SHARED, "models", name + ".mlir")
        inputs = os.path.join(self.root, "inputs", name)
        if not os.path.exists(os.path.join(inputs, "done")):
            log(f"cpu_peers: writing the inputs of {name} to {inputs}")
            with open(program) as f:
                write_inputs(inputs, model_inputs(name, f.read()))
        return program, inputs

    def micro(self, name):
        spec = micro_programs.PROGRAMS[name]()
        program = os.path.join(self.root, "micro", name + ".mlir")
        inputs = os.path.join(self.root, "micro", name)
        os.makedirs(os.path.dirname(program), exist_ok=True)
        if not os.path.exists(program) or open(program).read() != spec["text"]:
            with open(program, "w") as f:
                f.write(spec["text"])
            shutil.rmtree(inputs, ignore_errors=True)
        write_inputs(inputs, spec["inputs"])
        return program, inputs, spec

    def onnx(self, models):
        out = os.path.join(self.root, "onnx")
        missing = [m for m in models if not os.path.exists(os.path.join(out, m + ".onnx"))]
        if missing:
            log(f"cpu_peers: exporting {' '.join(missing)} to ONNX (Debian's torch)")
            subprocess.run([DEBIAN_PYTHON, os.path.join(PEERS, "onnx_export.py"), "--out", out,
                            "--models", *missing], check=True, stdout=sys.stderr)
        return out


# ---------------------------------------------------------------- runners

OPENBLAS_CORETYPE = None  # --openblas-coretype


def thread_env(threads):
    env = dict(os.environ)
    env.update(JITD_CPU_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads), JITD_NO_AUTOSTART="1")
    # OpenBLAS's kernels (jitd's and torch's GEMMs): what the library detects
    # on this CPU, as on a fresh machine (the jitd binary itself restarts
    # with better kernels when OpenBLAS falls back to generic ones), unless
    # --openblas-coretype names them; an OPENBLAS_CORETYPE inherited from the
    # caller's environment is dropped.
    env.pop("OPENBLAS_CORETYPE", None)
    if OPENBLAS_CORETYPE:
        env["OPENBLAS_CORETYPE"] = OPENBLAS_CORETYPE
    return env


def openblas_core():
    """The kernels OpenBLAS picks under thread_env (as Debian's numpy loads it)."""
    proc = subprocess.run([DEBIAN_PYTHON, "-c", "import numpy"], capture_output=True, text=True,
                          env=dict(thread_env(1), OPENBLAS_VERBOSE="2"))
    m = re.search(r"Core: (\w+)", proc.stdout + proc.stderr)
    return m.group(1) if m else "unknown"


class Runner:
    def __init__(self, args):
        self.args = args
        self.jitd_bin = os.path.abspath(args.jitd)
        self.loads = []

    def pin(self, threads):
        return ["taskset", "-c", str(self.args.pin_cpu)] if threads == 1 else []


    def sample_load(self):
        self.loads.append(os.getloadavg()[0])

    def run_json(self, cmd, env, timeout):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:6])} ... failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().split("\n")[-1])

    def jitd_run(self, program, inputs, threads, extra=()):
        files = sorted((f for f in os.listdir(inputs) if re.fullmatch(r"arg_\d+\.npy", f)),
                       key=lambda f: int(f[4:-4]))
        cmd = self.pin(threads) + [self.jitd_bin, "run", "--in-process", "--device=cpu", program,
                                   f"--resource-seed={self.args.resource_seed}",
                                   "--resource-fill=weights", *extra]
        for f in files:
            cmd += ["--input", f"{int(f[4:-4])}={os.path.join(inputs, f)}"]
        return cmd

    def jitd(self, program, inputs, threads):
        """A round of jitd: a fresh daemon (no disk cache), a first `jitd run`
        that compiles (cold) and executes once, then a second (a cache hit)
        of --warmup + --repeats executes. execute: the daemon's own time per
        execute (the device's Run on the shared-memory buffers the client
        filled once); cpu: the daemon process's CPU time over the second run
        divided by its executes; round trip: the client's."""
        daemon = Daemon(self.jitd_bin, threads, None, self.pin(threads))
        try:
            first = jitd_daemon_run(self, daemon, program, inputs, threads)
            cpu0 = daemon.cpu_ms()
            r = jitd_daemon_run(self, daemon, program, inputs, threads, repeat=self.args.repeats)
            cpu = (daemon.cpu_ms() - cpu0) / (self.args.repeats + self.args.warmup)
        finally:
            daemon.stop()
        return {"compile_ms": first["compile_ms"], "p50_ms": r["execute_p50_ms"],
                "min_ms": r["execute_min_ms"], "round_trip_p50_ms": r["round_trip_p50_ms"],
                "cpu_p50_ms": cpu}

    def worker(self, runtime, program, inputs, threads, extra=()):
        a = self.args
        cmd = self.pin(threads) + [a.python, os.path.join(PEERS, "peer_worker.py"),
                                   "--runtime", runtime.split("-")[0], "--program", program,
                                   "--threads", str(threads), "--repeats", str(a.repeats),
                                   "--warmup", str(a.warmup),
                                   "--resource-seed", str(a.resource_seed),
                                   "--cache", os.path.join(a.data, "xla"), *extra]
        if inputs:
            cmd += ["--inputs", inputs]
        if runtime == "xla-args":
            cmd += ["--weights", "args"]
        if runtime == "xla-donate":
            cmd += ["--donate"]
        env = thread_env(threads)
        if a.xla_dump and runtime.startswith(("xla", "flax")):
            dump = os.path.join(a.xla_dump, f"{os.path.basename(program).split('.')[0]}-{runtime}-t{threads}")
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + f" --xla_dump_to={dump}").strip()
        self.sample_load()
        r = self.run_json(cmd, env, a.timeout)
        return {"compile_ms": r["compile_ms"], "p50_ms": lower_median(r["execute_ms"]),
                "min_ms": min(r["execute_ms"]), "cpu_p50_ms": lower_median(r["cpu_ms"]),
                "faults_p50": lower_median(r["page_faults"])}

    def torch(self, model, threads):
        a = self.args
        cmd = self.pin(threads) + [DEBIAN_PYTHON, os.path.join(PEERS, "torch_worker.py"),
                                   "--model", model, "--threads", str(threads),
                                   "--repeats", str(a.repeats), "--warmup", str(a.warmup)]
        self.sample_load()
        r = self.run_json(cmd, thread_env(threads), a.timeout)
        best = min(r["variants"], key=lambda k: lower_median(r["variants"][k]["execute_ms"]))
        v = r["variants"][best]
        return {"p50_ms": lower_median(v["execute_ms"]), "min_ms": min(v["execute_ms"]),
                "cpu_p50_ms": lower_median(v["cpu_ms"]), "variant": best}


# ---------------------------------------------------------------- suites

def rotate(items, k):
    k %= len(items)
    return items[k:] + items[:k]


def summarize(rounds, key="p50_ms"):
    values = [r[key] for r in rounds if r.get(key) is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "lo": min(values), "hi": max(values), "n": len(values)}


def fmt_ms(ms):
    if ms is None:
        return "—"
    if ms < 0.1:
        return f"{ms * 1e3:.1f} µs"
    if ms < 10:
        return f"{ms:.2f}"
    if ms < 1000:
        return f"{ms:.1f}"
    return f"{ms:.0f}"


def suite_models(runner, data, args, report):
    runtimes = [r for r in args.runtimes if r in MODEL_RUNTIMES + ["xla-args", "jitd-daemon"]]
    onnx_dir = data.onnx(args.models) if "ort" in runtimes else None
    results = {}
    for threads in args.threads:
        for model in args.models:
            program, inputs = data.model(model)
            cell = {r: [] for r in runtimes}
            for rnd in range(args.rounds):
                for rt in rotate(runtimes, rnd):
                    log(f"cpu_peers: models {model} threads:{threads} round {rnd + 1}/{args.rounds} {rt}")
                    if rt == "jitd":
                        cell[rt].append(runner.jitd(program, inputs, threads))
                    elif rt in ("xla", "xla-args"):
                        if rt == "xla-args" and model != "jax_resnet_50":
                            continue  # only ResNet-50 has elided (constant) weights
                        cell[rt].append(runner.worker(rt, program, inputs, threads))
                    elif rt == "flax":
                        cell[rt].append(runner.worker("flax", model, None, threads))
                    elif rt == "ort":
                        cell[rt].append(runner.worker("ort", os.path.join(onnx_dir, model + ".onnx"),
                                                      None, threads))
                    elif rt == "torch":
                        cell[rt].append(runner.torch(model, threads))
            results[(model, threads)] = cell
    report["models"] = {f"{m}/threads:{t}": c for (m, t), c in results.items()}

    peers = [r for r in runtimes if r not in ("jitd", "jitd-daemon")]

    def table(title, key, agg):
        print(f"\n### {title}\n")
        print("| model | threads | " + " | ".join(TITLES[r] for r in runtimes) + " | jitd / best peer |")
        print("|---|---:|" + "---:|" * len(runtimes) + "---|")
        for (model, threads), cell in results.items():
            s = {}
            for r in runtimes:
                values = [x[key] for x in cell[r] if x.get(key) is not None]
                s[r] = agg(values) if values else None
            cells = []
            for r in runtimes:
                text = fmt_ms(s[r])
                if r == "torch" and s[r] is not None:
                    text += f" ({'/'.join(sorted({x['variant'] for x in cell[r]}))})"
                cells.append(text)
            best = min((r for r in peers if s[r] is not None), key=lambda r: s[r], default=None)
            ratio = (f"**{s['jitd'] / s[best]:.2f}** ({TITLES[best]})"
                     if best and s.get("jitd") is not None else "—")
            print(f"| {model} | {threads} | " + " | ".join(cells) + f" | {ratio} |")

    table("Models: execute time per inference, wall clock (ms; median over rounds of each "
          "round's median)", "p50_ms", statistics.median)
    table("Models: CPU time per inference, all threads (ms; median over rounds of each round's "
          "median; jitd: the daemon's CPU time per execute)", "cpu_p50_ms", statistics.median)
    table("Models: fastest call seen (ms; minimum over every round)", "min_ms", min)

    print("\n### Spread: each runtime's lowest and highest round median, wall clock (ms)\n")
    print("| model | threads | " + " | ".join(TITLES[r] for r in runtimes) + " |")
    print("|---|---:|" + "---:|" * len(runtimes))
    for (model, threads), cell in results.items():
        cells = []
        for r in runtimes:
            s = summarize(cell[r])
            cells.append(f"{fmt_ms(s['lo'])}–{fmt_ms(s['hi'])}" if s else "—")
        print(f"| {model} | {threads} | " + " | ".join(cells) + " |")

    compile_rt = [r for r in runtimes if r in ("jitd", "xla", "xla-args", "flax", "ort")]
    print("\n### Cold compile (ms; median over rounds and thread counts; ORT: session creation)\n")
    print("| model | " + " | ".join(TITLES[r] for r in compile_rt) + " | jitd / XLA:CPU (StableHLO) |")
    print("|---|" + "---:|" * len(compile_rt) + "---:|")
    for model in args.models:
        s = {}
        for r in compile_rt:
            rounds = [x for t in args.threads for x in results[(model, t)][r]]
            s[r] = summarize(rounds, "compile_ms")
        ratio = (f"**{s['jitd']['median'] / s['xla']['median']:.2f}**"
                 if s.get("jitd") and s.get("xla") else "—")
        print(f"| {model} | " + " | ".join(fmt_ms(s[r]["median"]) if s[r] else "—" for r in compile_rt)
              + f" | {ratio} |")


def bandwidth_floor(runner, data, threads):
    """bandwidth_floor.c on this machine: {kernel: GB/s} (median of 15)."""
    binary = os.path.join(data.root, "bandwidth_floor")
    source = os.path.join(PEERS, "bandwidth_floor.c")
    if not os.path.exists(binary) or os.path.getmtime(binary) < os.path.getmtime(source):
        subprocess.run(["cc", "-O3", "-march=native", "-pthread", source, "-o", binary], check=True)
    runner.sample_load()
    out = subprocess.run(runner.pin(threads) + [binary, str(threads), "15"], capture_output=True,
                         text=True, check=True).stdout
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\w+)\s+threads:\d+.*?([0-9.]+) GB/s$", out, re.M)}


def suite_micro(runner, data, args, report):
    runtimes = ["jitd", "xla", "xla-donate"]
    results = {}
    floors = {t: [bandwidth_floor(runner, data, t)] for t in args.threads}
    for threads in args.threads:
        for name in args.micro:
            program, inputs, spec = data.micro(name)
            cell = {r: [] for r in runtimes}
            for rnd in range(args.rounds):
                for rt in rotate(runtimes, rnd):
                    log(f"cpu_peers: micro {name} threads:{threads} round {rnd + 1}/{args.rounds} {rt}")
                    if rt == "jitd":
                        cell[rt].append(runner.jitd(program, inputs, threads))
                    else:
                        cell[rt].append(runner.worker(rt, program, inputs, threads))
            results[(name, threads)] = (cell, spec)
    for t in args.threads:
        floors[t].append(bandwidth_floor(runner, data, t))
    report["micro"] = {f"{n}/threads:{t}": c for (n, t), (c, _) in results.items()}
    report["bandwidth_floor"] = floors
    print("\n### Memory bandwidth on this machine (bandwidth_floor.c, GB/s read + written, "
          "before / after the microbenchmarks)\n")
    print("| threads | scale y = s*x | scale, streaming stores | triad a = b + s*c | triad, streaming stores | read (sum) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for t, (before, after) in floors.items():
        print(f"| {t} | " + " | ".join(f"{before[k]:.1f} / {after[k]:.1f}"
                                       for k in ("scale", "scale_nt", "triad", "triad_nt", "read")) + " |")
    print("\n### Microbenchmarks: the same StableHLO on jitd and XLA:CPU "
          "(ms; median over rounds of each round's median)\n")
    print("jitd: the daemon's execute (buffers in shared memory, reused); XLA:CPU: a call from "
          "Python with fresh results (as `jax.jit` without donation), and in place (result 0 "
          "donated onto argument 0: the kernel alone).\n")
    print("| program | threads | jitd | XLA:CPU | XLA:CPU in place | jitd / XLA | jitd / XLA in place "
          "| GB/s jitd / XLA in place | GFLOP/s jitd / XLA in place | XLA page faults per call "
          "| jitd round trip | CPU ms jitd / XLA in place | compile jitd / XLA (ms) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (name, threads), (cell, spec) in results.items():
        j, x, xd = (summarize(cell[r]) for r in ("jitd", "xla", "xla-donate"))
        jc, xc = summarize(cell["jitd"], "compile_ms"), summarize(cell["xla"], "compile_ms")
        rt = summarize(cell["jitd"], "round_trip_p50_ms")
        jcpu, xcpu = summarize(cell["jitd"], "cpu_p50_ms"), summarize(cell["xla-donate"], "cpu_p50_ms")
        faults = statistics.median(r["faults_p50"] for r in cell["xla"])
        if spec.get("dispatch"):
            # The cost of a call: the client's round trip (the daemon's own
            # time is below its 1 µs resolution) against XLA's call from Python.
            j = rt
        per_s = lambda n, s: f"{n / (s['median'] * 1e-3) / 1e9:.1f}" if s["median"] > 0 else "—"
        gbs = lambda s: per_s(spec["bytes"], s)
        gfl = lambda s: per_s(spec["flops"], s)
        print(f"| {name} | {threads} | {fmt_ms(j['median'])} | {fmt_ms(x['median'])} | "
              f"{fmt_ms(xd['median'])} | {j['median'] / x['median']:.2f} | "
              f"**{j['median'] / xd['median']:.2f}** | {gbs(j)} / {gbs(xd)} | {gfl(j)} / {gfl(xd)} | "
              f"{faults:.0f} | {fmt_ms(rt['median'])} | {fmt_ms(jcpu['median'])} / {fmt_ms(xcpu['median'])} | "
              f"{fmt_ms(jc['median'])} / {fmt_ms(xc['median'])} |")
    print("\nPrograms:\n")
    for name in args.micro:
        spec = micro_programs.PROGRAMS[name]()
        print(f"- `{name}`: {spec['what']}; {spec['bytes'] / 1e6:.1f} MB moved at least, "
              f"{spec['flops'] / 1e6:.1f} MFLOP")


class Daemon:
    """`jitd serve` on a socket of its own, its threads and pinning as a
    round's (the client that talks to it is not pinned: it waits)."""

    def __init__(self, jitd, threads, cache_dir, pin=()):
        self.dir = tempfile.mkdtemp(prefix="jitd-peers-")
        self.socket = os.path.join(self.dir, "jitd.sock")
        cache = ["--cache-dir", cache_dir] if cache_dir else ["--no-disk-cache"]
        self.proc = subprocess.Popen([*pin, jitd, "serve", "--socket", self.socket, *cache,
                                      "--default-device=cpu", "--log-level=error"],
                                     env=thread_env(threads), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.time() > deadline:
                self.proc.kill()
                raise RuntimeError("jitd serve did not start: " + self.proc.stderr.read().decode()[-2000:])
            time.sleep(0.02)

    def cpu_ms(self):
        """The daemon's CPU time so far: the sum of its live threads' time on
        a CPU (/proc/PID/task/*/schedstat, ns)."""
        total = 0
        for task in os.listdir(f"/proc/{self.proc.pid}/task"):
            try:
                with open(f"/proc/{self.proc.pid}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError):
                pass  # a thread that just ended
        return total / 1e6

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def jitd_daemon_run(runner, daemon, program, inputs, threads, repeat=None):
    cmd = runner.jitd_run(program, inputs, 0)  # the client unpinned
    cmd.remove("--in-process")
    cmd += ["--socket", daemon.socket, "--no-start-daemon"]
    if repeat:
        cmd += [f"--repeat={repeat}", f"--warmup={runner.args.warmup}"]
    runner.sample_load()
    proc = subprocess.run(cmd, env=thread_env(threads), capture_output=True, text=True,
                          timeout=runner.args.timeout)
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"jitd run --socket {program} failed:\n{text[-3000:]}")
    m = re.search(r"compile (hit|miss) ([^(]+)\(round trip ([^)]+)\)", text)
    out = {"hit": m.group(1) == "hit", "compile_ms": parse_duration(m.group(2)),
           "compile_round_trip_ms": parse_duration(m.group(3))}
    r = re.search(r"execute min ([^,]+), p50 ([^,]+), p90 [^;]+; round trip min ([^,]+), p50 ([^,]+),", text)
    if r:
        out.update(execute_min_ms=parse_duration(r.group(1)), execute_p50_ms=parse_duration(r.group(2)),
                   round_trip_p50_ms=parse_duration(r.group(4)))
    return out


def suite_cache(runner, data, args, report):
    rows = {}
    threads = max(args.threads)
    for model in args.models:
        program, inputs = data.model(model)
        rows[model] = []
        for rnd in range(args.rounds):
            log(f"cpu_peers: cache {model} round {rnd + 1}/{args.rounds}")
            cache_dir = tempfile.mkdtemp(prefix="jitd-peers-cache-")
            try:
                daemon = Daemon(runner.jitd_bin, threads, cache_dir)
                try:
                    cold = jitd_daemon_run(runner, daemon, program, inputs, threads)
                    hit = jitd_daemon_run(runner, daemon, program, inputs, threads)
                finally:
                    daemon.stop()
                daemon = Daemon(runner.jitd_bin, threads, cache_dir)
                try:
                    disk = jitd_daemon_run(runner, daemon, program, inputs, threads)
                finally:
                    daemon.stop()
            finally:
                shutil.rmtree(cache_dir, ignore_errors=True)
            if cold["hit"] or not hit["hit"] or not disk["hit"]:
                raise RuntimeError(f"{model}: expected miss, hit, hit; got {cold}, {hit}, {disk}")
            rows[model].append({"cold": cold, "memory_hit": hit, "disk_hit": disk})
    report["cache"] = rows
    print(f"\n### jitd's compile cache (daemon, {threads} threads; ms, median of {args.rounds} fresh caches)\n")
    print("| model | cold compile (daemon) | memory hit | disk hit (restarted daemon) | "
          "hit round trip (client) | cold / memory hit | cold / disk hit |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for model, rs in rows.items():
        med = lambda f: statistics.median(f(r) for r in rs)
        cold = med(lambda r: r["cold"]["compile_ms"])
        mem = med(lambda r: r["memory_hit"]["compile_ms"])
        disk = med(lambda r: r["disk_hit"]["compile_ms"])
        rt = med(lambda r: r["memory_hit"]["compile_round_trip_ms"])
        print(f"| {model} | {fmt_ms(cold)} | {fmt_ms(mem)} | {fmt_ms(disk)} | {fmt_ms(rt)} | "
              f"**{cold / max(mem, 1e-6):.0f}x** | {cold / max(disk, 1e-6):.0f}x |")


def suite_check(runner, data, args, report):
    """jitd's results against XLA:CPU's on the same programs and inputs."""
    print("\n### Check: jitd's results against XLA:CPU's (same program, inputs, filled weights)\n")
    print("| program | result | max abs difference | max abs value | relative |")
    print("|---|---|---:|---:|---:|")
    cases = [(m,) + data.model(m) for m in args.models] + \
            [(n,) + data.micro(n)[:2] for n in args.micro]
    worst = 0.0
    for name, program, inputs in cases:
        with tempfile.TemporaryDirectory() as tmp:
            jo, xo = os.path.join(tmp, "jitd"), os.path.join(tmp, "xla")
            cmd = runner.jitd_run(program, inputs, 2, ["--output", jo])
            proc = subprocess.run(cmd, env=thread_env(2), capture_output=True, text=True,
                                  timeout=args.timeout)
            if proc.returncode != 0:
                raise RuntimeError(f"jitd run {program}: {proc.stderr[-2000:]}")
            runner.worker("xla", program, inputs, 2, ["--save-outputs", xo])
            i = 0
            while os.path.exists(os.path.join(jo, f"result_{i}.npy")):
                a = np.load(os.path.join(jo, f"result_{i}.npy")).astype(np.float64)
                b = np.load(os.path.join(xo, f"result_{i}.npy")).astype(np.float64)
                diff, scale = float(np.abs(a - b).max()), float(np.abs(b).max())
                rel = diff / max(scale, 1e-30)
                worst = max(worst, rel)
                print(f"| {name} | {i} {list(b.shape)} | {diff:.3g} | {scale:.3g} | {rel:.2g} |")
                report.setdefault("check", {})[f"{name}/{i}"] = rel
                i += 1
    print(f"\nLargest relative difference: {worst:.2g}")
    if worst > 1e-3:
        raise SystemExit("check: jitd and XLA:CPU disagree (relative difference > 1e-3)")


# ---------------------------------------------------------------- header

def versions(args):
    v = {}
    for package in ("jax", "jaxlib", "flax", "onnxruntime", "onnx", "numpy"):
        try:
            v[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            v[package] = None
    proc = subprocess.run([DEBIAN_PYTHON, "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True)
    v["torch"] = proc.stdout.strip() or None
    v["jitd"] = subprocess.run([args.jitd, "--version"], capture_output=True, text=True).stdout.strip()
    git = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True, text=True)
    v["commit"] = git.stdout.strip()
    return v


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", nargs="+", default=["models"],
                        choices=["models", "micro", "cache", "check", "all"])
    parser.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    parser.add_argument("--micro", nargs="+", default=list(micro_programs.PROGRAMS),
                        choices=list(micro_programs.PROGRAMS))
    parser.add_argument("--runtimes", nargs="+", default=MODEL_RUNTIMES,
                        choices=MODEL_RUNTIMES + ["xla-args"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (fresh processes)")
    parser.add_argument("--repeats", type=int, default=11, help="timed calls per round")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls per round")
    parser.add_argument("--pin-cpu", type=int, default=1, help="the CPU 1-thread runs are pinned to")
    parser.add_argument("--resource-seed", type=int, default=0)
    parser.add_argument("--openblas-coretype", help="OPENBLAS_CORETYPE for jitd and torch (default: detected)")
    parser.add_argument("--jitd", default=os.path.join(REPO, "build", "bin", "jitd"))
    parser.add_argument("--python", default=sys.executable, help="the venv's python (workers)")
    parser.add_argument("--data", default=os.environ.get(
        "JITD_PEERS_DATA", os.path.join(os.path.expanduser("~"), ".cache", "jitd-peers")),
                        help="inputs, ONNX exports, XLA's filled modules (~1.5 GB)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per worker run")
    parser.add_argument("--json", help="write every round's figures here")
    parser.add_argument("--xla-dump", help="XLA_FLAGS=--xla_dump_to=DIR/<program>-<runtime>-t<N> for XLA runs")
    args = parser.parse_args()
    global OPENBLAS_CORETYPE
    OPENBLAS_CORETYPE = args.openblas_coretype
    if "all" in args.suite:
        args.suite = ["check", "models", "micro", "cache"]
    if not os.access(args.jitd, os.X_OK):
        raise SystemExit(f"cpu_peers: no jitd binary at {args.jitd} (bash scripts/build.sh jitd)")

    data = Data(args.data)
    runner = Runner(args)
    report = {"versions": versions(args), "args": vars(args)}
    start = datetime.datetime.now(datetime.timezone.utc)
    v = report["versions"]
    print(f"cpu_peers.py {' '.join(sys.argv[1:])}")
    print(f"date {start:%Y-%m-%d %H:%M} UTC; {cpu_name()}, {os.cpu_count()} CPUs; "
          f"load average at start {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{v['jitd']} at {v['commit']}; XLA:CPU = jaxlib {v['jaxlib']} (jax {v['jax']}, "
          f"flax {v['flax']}); onnxruntime {v['onnxruntime']} (onnx {v['onnx']}); torch {v['torch']} "
          f"(Debian); OpenBLAS kernels {openblas_core()} (jitd's and torch's GEMMs); "
          f"rounds {args.rounds} x {args.repeats} timed calls (+{args.warmup} warm-up); "
          f"1-thread runs pinned to CPU {args.pin_cpu}")
    for suite in args.suite:
        {"models": suite_models, "micro": suite_micro, "cache": suite_cache,
         "check": suite_check}[suite](runner, data, args, report)
    end = datetime.datetime.now(datetime.timezone.utc)
    if runner.loads:
        print(f"\nload average (1 min) before each run: min {min(runner.loads):.2f}, "
              f"median {statistics.median(runner.loads):.2f}, max {max(runner.loads):.2f} "
              f"({len(runner.loads)} runs, {start:%H:%M}–{end:%H:%M} UTC)")
    report["loads"] = runner.loads
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
