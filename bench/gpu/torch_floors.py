# cuBLAS GEMM throughput through torch on the same GPU (issue 19 item 2),
# and torch's kernels for the work of bench/gpu/*.mlir (item 3's peers),
# each timed with CUDA events around the op on device-resident operands,
# median of 20 after 5 untimed. GEMMs: f32 exact (TF32 off), f32 with
# TF32, bf16; 4096^3 (jitd's dot4096.mlir) and 8192^3.
import statistics
import torch

def device_ms(fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(25):
        start.record()
        fn()
        end.record()
        end.synchronize()
        if i >= 5:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def tflops(n, dtype, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.rand(n, n, device="cuda", dtype=dtype)
    b = torch.rand(n, n, device="cuda", dtype=dtype)
    ms = device_ms(lambda: torch.matmul(a, b))
    return ms, 2 * n ** 3 / (ms * 1e-3) / 1e12

print("torch", torch.__version__, torch.cuda.get_device_name())
for n in (4096, 8192):
    for name, dtype, tf32 in (("f32 exact", torch.float32, False), ("f32 TF32", torch.float32, True),
                              ("bf16", torch.bfloat16, False)):
        ms, t = tflops(n, dtype, tf32)
        print(f"floor: cuBLAS (torch.matmul) {name} {n}^3: {ms * 1e3:.0f} us, {t:.0f} TFLOP/s")

x = torch.rand(4096, 4096, device="cuda")
ms = device_ms(lambda: x.sum(dim=1))
print(f"torch: row sum 4096x4096 f32 (reduce4096.mlir): {ms * 1e3:.1f} us, {x.numel() * 4 / (ms * 1e-3) / 1e9:.0f} GB/s read")
v = torch.rand(16777216, device="cuda")
ms = device_ms(lambda: v.sum())
print(f"torch: sum of 16M f32 (reduce16m.mlir): {ms * 1e3:.1f} us, {v.numel() * 4 / (ms * 1e-3) / 1e9:.0f} GB/s read")
y = torch.rand(16777216, device="cuda")
ms = device_ms(lambda: torch.tanh(v * y + v) * y)
print(f"torch: tanh(x*y + x)*y over 16M f32 (chain16m.mlir, four kernels): {ms * 1e3:.1f} us")
