# Max abs / relative difference between two folders of result_<i>.npy.
import glob, os, sys
import numpy as np
a, b = sys.argv[1], sys.argv[2]
for fa in sorted(glob.glob(os.path.join(a, "result_*.npy"))):
    x = np.load(fa).astype(np.float64); y = np.load(os.path.join(b, os.path.basename(fa))).astype(np.float64)
    d = np.abs(x - y); scale = np.abs(y).max() or 1.0
    print(f"{os.path.basename(fa)} {x.shape}: max |cuda-cpu| {d.max():.3g}, relative to max |cpu| {d.max()/scale:.3g}, mean |d| {d.mean():.3g}")
