"""One timed round of one peer runtime, in a process of its own (cpu_peers.py
starts these; the venv's python). Prints one JSON line:
  {"runtime", "compile_ms", "execute_ms": [...], "cpu_ms": [...], ...}

Runtimes:
  xla      XLA:CPU (jaxlib's PJRT CPU client) compiling a StableHLO text file.
           Elided dense_resource constants are filled exactly as jitd fills
           them (resource_fill.py: seed, fill) and passed as constants
           (--weights constants, the same program jitd runs) or as extra
           arguments of @main (--weights args). Arguments from
           DIR/arg_<i>.npy (--inputs DIR). compile_ms: compile_and_load of
           the module's bytecode (StableHLO -> HLO, optimization, codegen),
           not the fill or the text parse. Each call allocates its results
           (XLA:CPU's own allocator: fresh pages for large ones, as a JAX
           user's call without donation); --donate aliases result 0 to
           argument 0 instead, the kernel alone.
  flax     the model in JAX/Flax (flax_models.py): compile_ms is
           jit(...).lower(...).compile(); variables are arguments.
  ort      ONNX Runtime on an exported model (onnx_export.py): default
           SessionOptions (graph optimizations ORT_ENABLE_ALL) but the
           thread counts: intra_op_num_threads = --threads,
           inter_op_num_threads = 1; CPUExecutionProvider. compile_ms is the
           InferenceSession's creation (graph optimization, kernel choice).

Each execute is timed around the call until the results are ready (host
wall clock), after --warmup untimed calls; cpu_ms is the process's CPU time
per call (all threads), page_faults its minor page faults.
"""
import argparse
import hashlib
import json
import os
import re
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resource_fill  # noqa: E402


def load_inputs(directory):
    if not directory:
        return []
    files = sorted((f for f in os.listdir(directory) if re.fullmatch(r"arg_\d+\.npy", f)),
                   key=lambda f: int(f[4:-4]))
    return [np.load(os.path.join(directory, f)) for f in files]


def time_calls(fn, repeats, warmup, before=None):
    """Wall and process CPU ms of each of `repeats` calls after `warmup`;
    `before` (untimed) runs ahead of every call."""
    for _ in range(warmup):
        if before:
            before()
        fn()
    wall, cpu, faults = [], [], []
    for _ in range(repeats):
        if before:
            before()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    time_calls.faults = faults
    return wall, cpu


# ---------------------------------------------------------------- XLA:CPU

_NP_OF_MLIR = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i64": np.int64,
               "i32": np.int32, "i16": np.int16, "i8": np.int8, "ui8": np.uint8,
               "ui32": np.uint32, "i1": np.bool_}


def weights_as_args_text(text):
    """The program with every elided dense_resource constant of @main's
    top-level block turned into an extra argument of @main, in order."""
    lines = text.split("\n")
    main_at = next(i for i, l in enumerate(lines) if "func.func public @main(" in l
                   or "func.func @main(" in l)
    pattern = re.compile(r"^\s*(%[\w.]+) = stablehlo\.constant dense_resource<[^>]*> : (tensor<[^>]*>)\s*$")
    params, kept = [], []
    for i, line in enumerate(lines):
        m = pattern.match(line) if i > main_at else None
        if m:
            params.append(f"{m.group(1)}: {m.group(2)}")
        else:
            kept.append(line)
    header = kept[main_at]
    close = header.index(") ->") if ") ->" in header else header.rindex(")")
    sep = ", " if header[header.index("@main(") + 6:close].strip() else ""
    kept[main_at] = header[:close] + sep + ", ".join(params) + header[close:]
    return "\n".join(kept), len(params)


def xla_module_bytecode(text, seed, fill, weights, cache_dir):
    """(bytecode, extra argument arrays): the StableHLO module for XLA, its
    elided constants filled (as constants, or as arguments appended)."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    key = hashlib.sha256(f"{text}\0{seed}\0{fill}\0{weights}".encode()).hexdigest()[:16]
    cached = os.path.join(cache_dir, f"{key}.mlirbc") if cache_dir else None
    extra = []
    with mlir.make_ir_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        places = resource_fill.resource_places(module)
        fills = []
        for op, handle, place in places:
            ty = ir.RankedTensorType(op.attributes["value"].type)
            fills.append((op, ty, resource_fill.resource_fill(
                ty.shape, _NP_OF_MLIR[str(ty.element_type)], handle, place, seed, fill)))
        if weights == "args" and fills:
            new_text, n = weights_as_args_text(text)
            if n != len(fills):
                raise ValueError("--weights args: only constants at the top of @main can become arguments")
            extra = [a for _, _, a in fills]
            module = ir.Module.parse(new_text)
        elif cached and os.path.exists(cached):
            with open(cached, "rb") as f:
                return f.read(), extra
        else:
            for op, ty, array in fills:
                op.attributes["value"] = ir.DenseElementsAttr.get(array, type=ty)
        bytecode = mlir.module_to_bytecode(module)
    if cached and weights == "constants":
        os.makedirs(cache_dir, exist_ok=True)
        with open(cached + ".tmp", "wb") as f:
            f.write(bytecode)
        os.replace(cached + ".tmp", cached)
    return bytecode, extra


def donate_first_argument(text):
    """@main's first argument aliased to its first result
    (tf.aliasing_output = 0): XLA writes the result into the argument's
    buffer (the caller donates it) instead of a fresh allocation."""
    m = re.search(r"@main\((%[\w.]+: tensor<[^>]*>)", text)
    if not m:
        raise ValueError("--donate: @main has no tensor argument")
    return text[:m.end()] + " {tf.aliasing_output = 0 : i32}" + text[m.end():]


def run_xla(args):
    import jax
    import jax.extend
    from jax._src import compiler
    from jax._src.lib import xla_client as xc

    with open(args.program) as f:
        text = f.read()
    if args.donate:
        text = donate_first_argument(text)
    bytecode, extra = xla_module_bytecode(text, args.resource_seed, args.resource_fill,
                                          args.weights, args.cache)
    backend = jax.extend.backend.get_backend("cpu")
    device = backend.local_devices()[0]
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
    t0 = time.perf_counter()
    exe = backend.compile_and_load(bytecode, xc.DeviceList((device,)), options)
    compile_ms = (time.perf_counter() - t0) * 1e3
    host = load_inputs(args.inputs) + extra
    buffers = [jax.device_put(a, device) for a in host]
    jax.block_until_ready(buffers)

    def call():
        outs = exe.execute_sharded(buffers).disassemble_into_single_device_arrays()
        for o in outs:
            o[0].block_until_ready()
        return outs

    def fresh_first_argument():
        # Untimed: a new buffer of the same values for the donated argument
        # (its pages written here, not in the timed call).
        buffers[0] = jax.device_put(np.array(host[0], copy=True), device)
        buffers[0].block_until_ready()

    if args.save_outputs:
        os.makedirs(args.save_outputs, exist_ok=True)
        for i, o in enumerate(call()):
            np.save(os.path.join(args.save_outputs, f"result_{i}.npy"), np.asarray(o[0]))
        if args.donate:
            fresh_first_argument()
    wall, cpu = time_calls(call, args.repeats, args.warmup,
                           before=fresh_first_argument if args.donate else None)
    return {"compile_ms": compile_ms, "execute_ms": wall, "cpu_ms": cpu,
            "threads_seen": len(os.sched_getaffinity(0))}


def run_flax(args):
    import jax
    import flax_models

    apply, variables, inputs = flax_models.build(args.program)
    device = jax.devices("cpu")[0]
    variables = jax.device_put(variables, device)
    inputs = [jax.device_put(np.asarray(a), device) for a in inputs]
    t0 = time.perf_counter()
    compiled = jax.jit(apply).lower(variables, *inputs).compile()
    compile_ms = (time.perf_counter() - t0) * 1e3

    def call():
        return jax.block_until_ready(compiled(variables, *inputs))

    wall, cpu = time_calls(call, args.repeats, args.warmup)
    return {"compile_ms": compile_ms, "execute_ms": wall, "cpu_ms": cpu}


def run_ort(args):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    t0 = time.perf_counter()
    session = ort.InferenceSession(args.program, options, providers=["CPUExecutionProvider"])
    compile_ms = (time.perf_counter() - t0) * 1e3
    inputs = dict(np.load(args.program[:-len(".onnx")] + ".inputs.npz"))
    wall, cpu = time_calls(lambda: session.run(None, inputs), args.repeats, args.warmup)
    return {"compile_ms": compile_ms, "execute_ms": wall, "cpu_ms": cpu,
            "optimization_level": str(options.graph_optimization_level)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runtime", choices=["xla", "flax", "ort"], required=True)
    parser.add_argument("--program", required=True,
                        help="xla: a StableHLO .mlir file; flax: a model name; ort: a .onnx file")
    parser.add_argument("--inputs", help="xla: a folder of arg_<i>.npy")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--resource-seed", type=int, default=0)
    parser.add_argument("--resource-fill", default="weights", choices=["weights", "uniform"])
    parser.add_argument("--weights", default="constants", choices=["constants", "args"])
    parser.add_argument("--cache", help="xla: folder for the filled modules' bytecode")
    parser.add_argument("--save-outputs", help="xla: write result_<i>.npy of one call here")
    parser.add_argument("--donate", action="store_true",
                        help="xla: result 0 written in place of argument 0 (no output allocation "
                             "in the timed call; the argument is fresh, untimed, before each)")
    args = parser.parse_args()
    result = {"xla": run_xla, "flax": run_flax, "ort": run_ort}[args.runtime](args)
    result["runtime"] = args.runtime
    result["page_faults"] = getattr(time_calls, "faults", None)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
