# torch on the GPU, the same work as jitd runs in bench/gpu/run_on_gpu.sh, timed the same
# way (host arrays in, host array out, per call; median of N).
import statistics, sys, time
import torch
def med(f, n, warm=5):
    for _ in range(warm): f()
    ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6
dev = "cuda"
x = torch.tensor([[1., 2., 3., 4.], [-2., .5, 0., 1.5]])
print(f"torch softmax 2x4, host->gpu->host: p50 {med(lambda: torch.softmax(x.to(dev), -1).cpu(), 2000):.1f} us")
xg = x.to(dev)
print(f"torch softmax 2x4, on gpu + sync:   p50 {med(lambda: (torch.softmax(xg, -1), torch.cuda.synchronize()), 2000):.1f} us")
a = torch.rand(16777216); b = torch.rand(16777216)
def chain(a, b):
    a, b = a.to(dev), b.to(dev)
    return (torch.tanh(a * b + a) * b).cpu()
print(f"torch chain 16M, host->gpu->host:   p50 {med(lambda: chain(a, b), 20) / 1e3:.2f} ms")
ag, bg = a.to(dev), b.to(dev)
print(f"torch chain 16M, on gpu + sync:     p50 {med(lambda: (torch.tanh(ag * bg + ag) * bg, torch.cuda.synchronize()), 20) / 1e3:.3f} ms")
m = torch.rand(4096, 4096); n = torch.rand(4096, 4096)
torch.backends.cuda.matmul.allow_tf32 = False
print(f"torch dot 4096 f32 (no tf32), host->gpu->host: p50 {med(lambda: (m.to(dev) @ n.to(dev)).cpu(), 10) / 1e3:.2f} ms")
mg, ng = m.to(dev), n.to(dev)
print(f"torch dot 4096 f32 (no tf32), on gpu + sync:   p50 {med(lambda: (mg @ ng, torch.cuda.synchronize()), 10) / 1e3:.3f} ms")
