"""The microbenchmark programs of cpu_peers.py --suite micro: StableHLO text
run unchanged by jitd and XLA:CPU, with the same inputs.

Each entry: text, inputs (numpy arrays, arguments in order), the bytes one
run must move at least (each input read once, each output written once) and
its FLOPs (multiply-adds count 2), and what it is. Weights of conv_bn_relu
are elided dense_resource constants (filled by both sides as jitd fills
them: resource_fill.py), as ResNet-50's are.
"""
import numpy as np

import resource_fill

N_CHAIN = 1 << 24          # 16M f32 = 64 MiB per tensor
ROWS, COLS = 4096, 1024    # softmax / layer norm: 16 MiB
HEADS, SEQ, HEAD_DIM = 12, 256, 64
BATCH, M = 32, 256         # batched dot [32,256,256] x [32,256,256]
SKINNY_M, SKINNY_K = 7, 4096  # skinny dot: 7 rows against a 64 MiB weight


def _uniform(shape, seed, low=-1.0, high=1.0):
    u = resource_fill.random_literal(shape, np.float32, seed, "uniform")  # [-1, 1)
    return (low + (u + 1) * 0.5 * (high - low)).astype(np.float32)


def chain():
    t = f"tensor<{N_CHAIN}xf32>"
    text = f"""module @chain {{
  func.func public @main(%x: {t}) -> {t} {{
    %a = stablehlo.constant dense<1.500000e+00> : {t}
    %b = stablehlo.constant dense<5.000000e-01> : {t}
    %z = stablehlo.constant dense<0.000000e+00> : {t}
    %c = stablehlo.constant dense<2.500000e-01> : {t}
    %0 = stablehlo.multiply %x, %a : {t}
    %1 = stablehlo.add %0, %b : {t}
    %2 = stablehlo.maximum %1, %z : {t}
    %3 = stablehlo.multiply %2, %x : {t}
    %4 = stablehlo.subtract %3, %c : {t}
    return %4 : {t}
  }}
}}
"""
    return dict(text=text, inputs=[_uniform((N_CHAIN,), 1)], bytes=2 * 4 * N_CHAIN,
                flops=5 * N_CHAIN,
                what="y = max(x*1.5+0.5, 0)*x - 0.25 over 16M f32 (5 ops, one pass: memory-bound)")


def chain_tanh():
    t = f"tensor<{N_CHAIN}xf32>"
    s = "tensor<f32>"
    text = f"""module @chain_tanh {{
  func.func public @main(%x: {t}, %a: {s}, %b: {s}, %c: {s}) -> {t} {{
    %ab = stablehlo.broadcast_in_dim %a, dims = [] : ({s}) -> {t}
    %bb = stablehlo.broadcast_in_dim %b, dims = [] : ({s}) -> {t}
    %cb = stablehlo.broadcast_in_dim %c, dims = [] : ({s}) -> {t}
    %0 = stablehlo.multiply %ab, %x : {t}
    %1 = stablehlo.add %0, %bb : {t}
    %2 = stablehlo.tanh %1 : {t}
    %3 = stablehlo.multiply %2, %cb : {t}
    return %3 : {t}
  }}
}}
"""
    scalars = [np.array(v, np.float32) for v in (0.75, 0.1, 2.0)]
    return dict(text=text, inputs=[_uniform((N_CHAIN,), 2)] + scalars, bytes=2 * 4 * N_CHAIN,
                flops=4 * N_CHAIN,
                what="y = tanh(a*x+b)*c over 16M f32, a b c scalar arguments (bench/cpu_bench.cc's elementwise)")


def softmax():
    t, r = f"tensor<{ROWS}x{COLS}xf32>", f"tensor<{ROWS}xf32>"
    text = f"""module @softmax {{
  func.func public @main(%x: {t}) -> {t} {{
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : ({t}, tensor<f32>) -> {r}
    %1 = stablehlo.broadcast_in_dim %0, dims = [0] : ({r}) -> {t}
    %2 = stablehlo.subtract %x, %1 : {t}
    %3 = stablehlo.exponential %2 : {t}
    %4 = stablehlo.reduce(%3 init: %zero) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> {r}
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : ({r}) -> {t}
    %6 = stablehlo.divide %3, %5 : {t}
    return %6 : {t}
  }}
}}
"""
    n = ROWS * COLS
    return dict(text=text, inputs=[_uniform((ROWS, COLS), 3, -4, 4)], bytes=2 * 4 * n, flops=5 * n,
                what=f"softmax over the rows of f32[{ROWS},{COLS}] (max, exp, sum, divide as JAX lowers it)")


def layer_norm():
    t, r, v = f"tensor<{ROWS}x{COLS}xf32>", f"tensor<{ROWS}xf32>", f"tensor<{COLS}xf32>"
    text = f"""module @layer_norm {{
  func.func public @main(%x: {t}, %g: {v}, %b: {v}) -> {t} {{
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %n = stablehlo.constant dense<{float(COLS):e}> : {r}
    %eps = stablehlo.constant dense<9.99999996E-13> : {r}
    %0 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> {r}
    %mean = stablehlo.divide %0, %n : {r}
    %1 = stablehlo.broadcast_in_dim %mean, dims = [0] : ({r}) -> {t}
    %d = stablehlo.subtract %x, %1 : {t}
    %d2 = stablehlo.multiply %d, %d : {t}
    %2 = stablehlo.reduce(%d2 init: %zero) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> {r}
    %var = stablehlo.divide %2, %n : {r}
    %3 = stablehlo.add %var, %eps : {r}
    %rs = stablehlo.rsqrt %3 : {r}
    %4 = stablehlo.broadcast_in_dim %rs, dims = [0] : ({r}) -> {t}
    %5 = stablehlo.multiply %d, %4 : {t}
    %gb = stablehlo.broadcast_in_dim %g, dims = [1] : ({v}) -> {t}
    %bb = stablehlo.broadcast_in_dim %b, dims = [1] : ({v}) -> {t}
    %6 = stablehlo.multiply %5, %gb : {t}
    %7 = stablehlo.add %6, %bb : {t}
    return %7 : {t}
  }}
}}
"""
    n = ROWS * COLS
    return dict(text=text, inputs=[_uniform((ROWS, COLS), 4), _uniform((COLS,), 5, 0.5, 1.5),
                                   _uniform((COLS,), 6)],
                bytes=2 * 4 * n, flops=8 * n,
                what=f"layer norm over the rows of f32[{ROWS},{COLS}] with scale and bias (eps 1e-12, BERT's)")


def attention():
    q = f"tensor<1x{HEADS}x{SEQ}x{HEAD_DIM}xf32>"
    s = f"tensor<1x{HEADS}x{SEQ}x{SEQ}xf32>"
    r = f"tensor<1x{HEADS}x{SEQ}xf32>"
    text = f"""module @attention {{
  func.func public @main(%q: {q}, %k: {q}, %v: {q}, %mask: {s}) -> {q} {{
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %scale = stablehlo.constant dense<1.250000e-01> : {s}
    %0 = stablehlo.dot_general %q, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3] : ({q}, {q}) -> {s}
    %1 = stablehlo.multiply %0, %scale : {s}
    %2 = stablehlo.add %1, %mask : {s}
    %3 = stablehlo.reduce(%2 init: %ninf) applies stablehlo.maximum across dimensions = [3] : ({s}, tensor<f32>) -> {r}
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : ({r}) -> {s}
    %5 = stablehlo.subtract %2, %4 : {s}
    %6 = stablehlo.exponential %5 : {s}
    %7 = stablehlo.reduce(%6 init: %zero) applies stablehlo.add across dimensions = [3] : ({s}, tensor<f32>) -> {r}
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1, 2] : ({r}) -> {s}
    %9 = stablehlo.divide %6, %8 : {s}
    %10 = stablehlo.dot_general %9, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : ({s}, {q}) -> {q}
    return %10 : {q}
  }}
}}
"""
    shape_q = (1, HEADS, SEQ, HEAD_DIM)
    mask = np.zeros((1, HEADS, SEQ, SEQ), np.float32)
    mask[..., SEQ - 16:] = -1e9  # the last 16 keys are padding
    flops = 2 * 2 * HEADS * SEQ * SEQ * HEAD_DIM + 6 * HEADS * SEQ * SEQ
    return dict(text=text, inputs=[_uniform(shape_q, 7), _uniform(shape_q, 8), _uniform(shape_q, 9), mask],
                bytes=4 * (4 * HEADS * SEQ * HEAD_DIM + HEADS * SEQ * SEQ), flops=flops,
                what=f"attention: softmax(q k^T / 8 + mask) v, {HEADS} heads, sequence {SEQ}, head {HEAD_DIM}")


def batched_dot():
    t = f"tensor<{BATCH}x{M}x{M}xf32>"
    text = f"""module @batched_dot {{
  func.func public @main(%a: {t}, %b: {t}) -> {t} {{
    %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : ({t}, {t}) -> {t}
    return %0 : {t}
  }}
}}
"""
    return dict(text=text, inputs=[_uniform((BATCH, M, M), 10), _uniform((BATCH, M, M), 11)],
                bytes=3 * 4 * BATCH * M * M, flops=2 * BATCH * M ** 3,
                what=f"batched dot f32[{BATCH},{M},{M}] x f32[{BATCH},{M},{M}]")


def skinny_dot():
    x = f"tensor<{SKINNY_M}x{SKINNY_K}xf32>"
    w = f"tensor<{SKINNY_K}x{SKINNY_K}xf32>"
    text = f"""module @skinny_dot {{
  func.func public @main(%x: {x}, %w: {w}) -> {x} {{
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [1] : ({x}, {w}) -> {x}
    return %0 : {x}
  }}
}}
"""
    return dict(text=text, inputs=[_uniform((SKINNY_M, SKINNY_K), 15),
                                   resource_fill.random_literal((SKINNY_K, SKINNY_K), np.float32, 16)],
                bytes=4 * (SKINNY_K * SKINNY_K + 2 * SKINNY_M * SKINNY_K),
                flops=2 * SKINNY_M * SKINNY_K * SKINNY_K,
                what=f"x[{SKINNY_M},{SKINNY_K}] times a [{SKINNY_K},{SKINNY_K}] weight in torch's [out, in] "
                     "layout (BERT's projections at sequence 7: a weight too big for the caches, "
                     "streamed once)")


def conv_bn_relu():
    x = "tensor<1x56x56x64xf32>"
    c = "tensor<1x1x1x64xf32>"
    text = f"""module @conv_bn_relu {{
  func.func public @main(%x: {x}) -> {x} {{
    %eps = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %w = stablehlo.constant dense_resource<__elided__> : tensor<3x3x64x64xf32>
    %mean = stablehlo.constant dense_resource<__elided__> : tensor<64xf32>
    %var = stablehlo.constant dense_resource<__elided__> : tensor<64xf32>
    %scale = stablehlo.constant dense_resource<__elided__> : tensor<64xf32>
    %offset = stablehlo.constant dense_resource<__elided__> : tensor<64xf32>
    %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {{pad = [[1, 1], [1, 1]]}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : ({x}, tensor<3x3x64x64xf32>) -> {x}
    %1 = stablehlo.broadcast_in_dim %mean, dims = [3] : (tensor<64xf32>) -> {c}
    %2 = stablehlo.broadcast_in_dim %var, dims = [3] : (tensor<64xf32>) -> {c}
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : ({c}) -> {x}
    %4 = stablehlo.subtract %0, %3 : {x}
    %5 = stablehlo.broadcast_in_dim %eps, dims = [] : (tensor<f32>) -> {c}
    %6 = stablehlo.add %2, %5 : {c}
    %7 = stablehlo.rsqrt %6 : {c}
    %8 = stablehlo.reshape %scale : (tensor<64xf32>) -> {c}
    %9 = stablehlo.multiply %7, %8 : {c}
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1, 2, 3] : ({c}) -> {x}
    %11 = stablehlo.multiply %4, %10 : {x}
    %12 = stablehlo.reshape %offset : (tensor<64xf32>) -> {c}
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1, 2, 3] : ({c}) -> {x}
    %14 = stablehlo.add %11, %13 : {x}
    %15 = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> {x}
    %16 = stablehlo.maximum %14, %15 : {x}
    return %16 : {x}
  }}
}}
"""
    pixels = 56 * 56
    return dict(text=text, inputs=[_uniform((1, 56, 56, 64), 12)],
                bytes=4 * (2 * pixels * 64 + 9 * 64 * 64), flops=2 * pixels * 64 * 64 * 9 + 4 * pixels * 64,
                what="3x3 convolution 64->64 on 1x56x56x64 NHWC + batch norm + relu (ResNet-50's stage 1; "
                     "weights and statistics elided constants)")


def tiny():
    t = "tensor<4xf32>"
    text = f"""module @tiny {{
  func.func public @main(%a: {t}, %b: {t}) -> {t} {{
    %0 = stablehlo.add %a, %b : {t}
    return %0 : {t}
  }}
}}
"""
    return dict(text=text, inputs=[_uniform((4,), 13), _uniform((4,), 14)], bytes=48, flops=4,
                dispatch=True,
                what="f32[4] + f32[4]: the cost of one call (jitd: the client's round trip to the daemon)")


PROGRAMS = {f.__name__: f for f in (chain, chain_tanh, softmax, layer_norm, attention, batched_dot,
                                    skinny_dot, conv_bn_relu, tiny)}
