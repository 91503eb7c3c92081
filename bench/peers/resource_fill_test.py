"""resource_fill.py reproduces jitd's fill of elided dense_resource constants.

A small program returns elided constants of several ranks, element types,
two handles, one inside a called function and one inside a region; `jitd
run` fills them (on the cpu device, through its pass pipeline, and on the
interpreter), and every result must equal resource_fill.py's bit for bit,
for two seeds and both fills. Plus splitmix64's known first outputs.

  JITD_BINARY=build/bin/jitd .venv/bin/python bench/peers/resource_fill_test.py
(the venv's python: the places are walked with jaxlib's MLIR bindings).
Skips the jitd comparison when no jitd binary is found.
"""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resource_fill  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = """
module {
  func.func public @main(%p: tensor<i1>) -> (tensor<f32>, tensor<5xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
      tensor<2x3x2x2xf32>, tensor<6xf64>, tensor<7xi32>, tensor<5xui8>, tensor<4xi1>, tensor<3x4xf32>,
      tensor<2x2xf32>, tensor<16x9xf32>) {
    %a = stablehlo.constant dense_resource<__elided__> : tensor<f32>
    %b = stablehlo.constant dense_resource<__elided__> : tensor<5xf32>
    %c = stablehlo.constant dense_resource<__elided__> : tensor<3x4xf32>
    %f = call @inner() : () -> tensor<3x4xf32>
    %d = stablehlo.constant dense_resource<__elided__> : tensor<2x3x2x2xf32>
    %e = stablehlo.constant dense_resource<__elided__> : tensor<6xf64>
    %g = stablehlo.constant dense_resource<other_blob> : tensor<7xi32>
    %h = stablehlo.constant dense_resource<other_blob> : tensor<5xui8>
    %i = stablehlo.constant dense_resource<__elided__> : tensor<4xi1>
    %j = stablehlo.constant dense_resource<__elided__> : tensor<3x4xf32>
    %k = "stablehlo.if"(%p) ({
      %t = stablehlo.constant dense_resource<__elided__> : tensor<2x2xf32>
      stablehlo.return %t : tensor<2x2xf32>
    }, {
      %z = stablehlo.constant dense<0.0> : tensor<2x2xf32>
      stablehlo.return %z : tensor<2x2xf32>
    }) : (tensor<i1>) -> tensor<2x2xf32>
    %l = stablehlo.constant dense_resource<__elided__> : tensor<16x9xf32>
    return %a, %b, %c, %f, %d, %e, %g, %h, %i, %j, %k, %l : tensor<f32>, tensor<5xf32>, tensor<3x4xf32>,
      tensor<3x4xf32>, tensor<2x3x2x2xf32>, tensor<6xf64>, tensor<7xi32>, tensor<5xui8>, tensor<4xi1>,
      tensor<3x4xf32>, tensor<2x2xf32>, tensor<16x9xf32>
  }
  func.func private @inner() -> tensor<3x4xf32> {
    %0 = stablehlo.constant dense_resource<__elided__> : tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
}
"""

# Which result each elided constant is, in resource_places' order (the
# walk: %a %b %c, @inner's (reached by the call), %d %e %g %h %i %j, the
# if's then-branch, %l).
RESULT_OF_PLACE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]


def find_jitd():
    path = os.environ.get("JITD_BINARY", os.path.join(REPO, "build", "bin", "jitd"))
    return path if os.access(path, os.X_OK) else None


def expected_results(seed, fill):
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir
    with mlir.make_ir_context(), ir.Location.unknown():
        module = ir.Module.parse(PROGRAM)
        out = []
        for op, handle, place in resource_fill.resource_places(module):
            ty = ir.RankedTensorType(op.attributes["value"].type)
            out.append((handle, place, resource_fill.resource_fill(
                ty.shape, element_dtype(str(ty.element_type)), handle, place, seed, fill)))
    return out


def element_dtype(name):
    return {"f32": np.float32, "f64": np.float64, "i32": np.int32, "ui8": np.uint8,
            "i1": np.bool_}[name]


class SplitMixTest(unittest.TestCase):
    def test_known_outputs(self):
        # splitmix64 from state 0: its reference implementation's first outputs.
        got = resource_fill.splitmix_stream(0, 3)
        self.assertEqual([int(v) for v in got],
                         [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F])

    def test_seed_mixes_handle_and_place(self):
        s = resource_fill.resource_seed("ab", 0, 0)
        self.assertEqual(s, (ord("a") * 1099511628211 + ord("b")) % (1 << 64))
        self.assertEqual(resource_fill.resource_seed("ab", 3, 0), (s + (3 << 32)) % (1 << 64))

    def test_weights_bounds(self):
        w = resource_fill.random_literal((64, 8), np.float32, 5, "weights")
        self.assertLessEqual(float(np.abs(w).max()), np.sqrt(3 / 64))
        v = resource_fill.random_literal((100,), np.float32, 5, "weights")
        self.assertTrue(((v >= 0.5) & (v < 1.5)).all())


@unittest.skipUnless(find_jitd(), "no jitd binary (build/bin/jitd or $JITD_BINARY)")
class AgreesWithJitdTest(unittest.TestCase):
    def run_jitd(self, device, seed, fill, directory):
        pred = os.path.join(directory, "pred.npy")
        np.save(pred, np.array(True))
        program = os.path.join(directory, "fills.mlir")
        with open(program, "w") as f:
            f.write(PROGRAM)
        out = os.path.join(directory, f"out_{device}_{seed}_{fill}")
        env = dict(os.environ, JITD_CPU_THREADS="1")
        proc = subprocess.run(
            [find_jitd(), "run", "--in-process", f"--device={device}", program,
             "--input", f"0={pred}", f"--resource-seed={seed}", f"--resource-fill={fill}",
             "--output", out],
            capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return [np.load(os.path.join(out, f"result_{i}.npy")) for i in range(12)]

    def test_fills_agree(self):
        with tempfile.TemporaryDirectory() as directory:
            for device in ("cpu", "interpreter"):
                for seed, fill in ((0, "weights"), (12345, "uniform")):
                    got = self.run_jitd(device, seed, fill, directory)
                    for k, (handle, place, want) in enumerate(expected_results(seed, fill)):
                        have = got[RESULT_OF_PLACE[k]]
                        with self.subTest(device=device, seed=seed, fill=fill, handle=handle,
                                          place=place):
                            self.assertEqual(have.dtype, want.dtype)
                            self.assertEqual(have.shape, want.shape)
                            self.assertTrue(np.array_equal(have.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8)),
                                            f"jitd {have.ravel()[:4]} python {want.ravel()[:4]}")


if __name__ == "__main__":
    unittest.main()
