#!/usr/bin/env python3
"""A small MLP built with jitd's ComputationBuilder, compiled and run by the
jitd daemon, and checked against numpy.

    build/bin/jitd serve &                       # a daemon (once per machine)
    PYTHONPATH=libclient/python /usr/bin/python3 examples/mlp.py

Options: --platform cpu|cuda|interpreter (default: jitd.get_client()'s
choice), --socket PATH (default $JITD_SOCKET or the daemon's default place).

The network: logits = relu(x @ w1 + b1) @ w2 + b2, then softmax over the
classes, for a batch of 16 inputs of 4 features, 32 hidden units, 3 classes.
The weights are LocalBuffers (shared memory, sent once) and the batch is a
plain numpy argument.
"""

import argparse
import sys

import numpy as np

import jitd


def build_mlp(batch, features, hidden, classes):
    """The forward pass as a jitd Computation of (x, w1, b1, w2, b2)."""
    f32 = np.float32
    c = jitd.ComputationBuilder("mlp")
    x = c.ParameterWithShape(jitd.Shape(f32, (batch, features)), name="x")
    w1 = c.ParameterWithShape(jitd.Shape(f32, (features, hidden)), name="w1")
    b1 = c.ParameterWithShape(jitd.Shape(f32, (hidden,)), name="b1")
    w2 = c.ParameterWithShape(jitd.Shape(f32, (hidden, classes)), name="w2")
    b2 = c.ParameterWithShape(jitd.Shape(f32, (classes,)), name="b2")

    # Dense layer 1 + ReLU; the bias row is broadcast along dimension 1.
    h = c.Add(c.Dot(x, w1), b1, broadcast_dimensions=(1,))
    h = c.Max(h, c.ConstantF32Scalar(0.0))
    # Dense layer 2.
    logits = c.Add(c.Dot(h, w2), b2, broadcast_dimensions=(1,))

    # Softmax over the classes, with the max subtracted for stability.
    max_c = jitd.ComputationBuilder("max")
    max_c.Max(max_c.ParameterFromNumpy(f32(0)), max_c.ParameterFromNumpy(f32(0)))
    add_c = jitd.ComputationBuilder("add")
    add_c.Add(add_c.ParameterFromNumpy(f32(0)), add_c.ParameterFromNumpy(f32(0)))
    row_max = c.Reduce(logits, c.ConstantF32Scalar(-np.inf), max_c.Build(), [1])
    e = c.Exp(c.Sub(logits, row_max, broadcast_dimensions=(0,)))
    row_sum = c.Reduce(e, c.ConstantF32Scalar(0.0), add_c.Build(), [1])
    c.Div(e, row_sum, broadcast_dimensions=(0,))
    return c.Build()


def numpy_mlp(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", choices=jitd.PLATFORMS)
    parser.add_argument("--socket")
    args = parser.parse_args()

    client = jitd.get_client(args.platform, socket_path=args.socket)
    batch, features, hidden, classes = 16, 4, 32, 3
    rng = np.random.RandomState(0)
    params = [rng.randn(features, hidden).astype(np.float32) * 0.5,
              rng.randn(hidden).astype(np.float32) * 0.1,
              rng.randn(hidden, classes).astype(np.float32) * 0.5,
              rng.randn(classes).astype(np.float32) * 0.1]

    computation = build_mlp(batch, features, hidden, classes)
    print("parameters:", ", ".join(str(s) for s in computation.GetParameterShapes()))
    print("result:    ", computation.GetReturnValueShape())
    executable = computation.Compile(client=client)
    print("compiled on %r (cache hit: %s)" % (client.platform, executable.cache_hit))

    # The weights go to shared memory once; each batch is an ndarray.
    weights = [jitd.LocalBuffer.from_pyval(p, client=client) for p in params]
    worst = 0.0
    for step in range(3):
        x = rng.randn(batch, features).astype(np.float32)
        x_buffer = jitd.LocalBuffer.from_pyval(x, client=client)
        probs = executable.ExecuteWithBuffers([x_buffer] + weights).to_py()
        want = numpy_mlp(x, *params)
        assert probs.dtype == np.float32 and probs.shape == (batch, classes)
        worst = max(worst, float(np.abs(probs - want).max()))
        print("batch %d: predicted classes %s (execute %d us)"
              % (step, probs.argmax(axis=1).tolist(), executable.last_timing["execute_micros"]))
    # The same through Execute with plain arrays.
    probs = executable.Execute([x] + params)
    worst = max(worst, float(np.abs(probs - numpy_mlp(x, *params)).max()))
    # cuda computes f32 dots at DEFAULT precision in TF32 (10-bit
    # mantissas), as XLA does on GPUs: about 1e-3 relative per product here.
    # `jitd serve --cuda-exact-f32` makes them exact f32 (then 1e-5 holds).
    tolerance = 2e-3 if client.platform == "cuda" else 1e-5
    print("max |jitd - numpy| = %.3g (tolerance %g on %s)" % (worst, tolerance, client.platform))
    if worst > tolerance:
        print("MISMATCH against numpy", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
