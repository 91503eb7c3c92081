"""Writes tests/jax_export/jax/*.mlir: real `jax.export` programs for CPU,
exported by the pinned JAX of scripts/requirements-jax.txt, each wrapped
into a self-checking program that `jitd conformance` runs.

Run through generate.py (`.venv/bin/python tests/jax_export/generate.py
--jax`); the pinned venv is made by `bash scripts/venv.sh`.

Each file is one JAX function, one module per element type (`// -----`).
A module holds the export as JAX printed it (locations and all), its
`@main` renamed `@exported` and made private, and a new `@main` that feeds
it the case's inputs (seeded random data, as constants), then checks its
results:

- outputs that are unique (cholesky factors, determinants, solves,
  eigenvalues of Hermitian matrices, singular values, norms, random bits,
  the model's logits) against JAX's own outputs on its CPU backend,
  normalized: max |x - x_jax| / max(1, max |x_jax|);
- outputs that are unique only up to phases or order (eigenvectors, Schur
  vectors, Q of QR, U / V^H of the SVD, eig's eigenvalues) by what defines
  them: A V = V diag(w) with unit columns, A = Z T Z^H with Z unitary and T
  (quasi-)triangular, A = Q R with Q^H Q = I, order-free sums of the
  eigenvalues against JAX's;
- integer outputs (pivots, ranks, permutations) exactly.

The comparisons are written here from the math, as JAX functions; each is
exported too (without locations, its symbols prefixed `chk_`) and called
by @main on the inputs, the outputs and JAX's outputs; every residual it
returns is checked with `check.expect_almost_eq_const ..., 0` within the
element type's tolerance. Nothing is taken from JAX's own tests.
"""
import os
import re

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import export, lax  # noqa: E402
from jax._src.lax import linalg as lax_linalg  # noqa: E402  (geqrf is not public)

jax.config.update("jax_platforms", "cpu")

HIGHEST = lax.Precision.HIGHEST
FLOATS = [np.float32, np.float64, np.complex64, np.complex128]
# Normalized residual allowed, by the real type of the case.
TOL = {np.float32: 2e-4, np.float64: 1e-9}


def real_of(dt):
    return {np.float32: np.float32, np.float64: np.float64, np.complex64: np.float32,
            np.complex128: np.float64}.get(dt, np.float64 if np.dtype(dt).itemsize == 8 else np.float32)


def is_complex(dt):
    return np.issubdtype(dt, np.complexfloating)


def wide(dt):
    return np.float64 in (dt, real_of(dt)) or dt in (np.int64, np.uint64)


# --- printing values as MLIR ------------------------------------------------------

MLIR_TYPES = {
    np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "complex<f32>", np.dtype(np.complex128): "complex<f64>",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64", np.dtype(np.uint8): "ui8", np.dtype(np.uint16): "ui16",
    np.dtype(np.uint32): "ui32", np.dtype(np.uint64): "ui64", np.dtype(np.bool_): "i1",
}


def mlir_type(arr):
    arr = np.asarray(arr)
    et = MLIR_TYPES[arr.dtype]
    if arr.ndim == 0:
        return "tensor<%s>" % et
    return "tensor<%sx%s>" % ("x".join(str(d) for d in arr.shape), et)


def fmt_float(x, dtype):
    x = float(x)
    if np.isfinite(x):
        return "%.*e" % (16 if np.dtype(dtype).itemsize == 8 else 8, x)
    bits = np.array([x], dtype=dtype).view(np.uint64 if np.dtype(dtype).itemsize == 8 else np.uint32)[0]
    return "0x%0*X" % (2 * np.dtype(dtype).itemsize, int(bits))


def fmt_elem(v, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "true" if v else "false"
    if np.issubdtype(dtype, np.integer):
        return str(int(v))
    if np.issubdtype(dtype, np.complexfloating):
        r = real_of(dtype.type)
        return "(%s, %s)" % (fmt_float(v.real, r), fmt_float(v.imag, r))
    return fmt_float(v, dtype)


def dense(arr):
    arr = np.asarray(arr)

    def rec(a):
        if a.ndim == 0:
            return fmt_elem(a[()], arr.dtype)
        return "[" + ", ".join(rec(x) for x in a) + "]"
    if arr.size == 0:
        return "dense<>"
    flat = arr.reshape(-1)
    if np.all(flat == flat[0]) and not (np.issubdtype(arr.dtype, np.inexact) and np.isnan(flat[0])):
        return "dense<%s>" % fmt_elem(flat[0], arr.dtype)
    return "dense<%s>" % rec(arr)


# --- module surgery ---------------------------------------------------------------

def strip_locations(text):
    """The module without `#loc` aliases and `loc(...)` annotations."""
    lines = [l for l in text.split("\n") if not l.startswith("#loc")]
    text = "\n".join(lines)
    out, i = [], 0
    while True:
        j = text.find(" loc(", i)
        if j < 0:
            out.append(text[i:])
            break
        out.append(text[i:j])
        depth, k = 0, j + 4
        while k < len(text):
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            elif text[k] == '"':
                k = text.index('"', k + 1)
            k += 1
        i = k + 1
    return "".join(out)


FUNC_RE = re.compile(r"func\.func (?:public |private )?@([\w$.-]+)\(")


def rename_symbols(text, prefix):
    names = FUNC_RE.findall(text)
    for n in sorted(names, key=len, reverse=True):
        text = re.sub(r"@%s(?=[^\w$.-])" % re.escape(n), "@%s%s" % (prefix, n), text)
    return text


def module_body(text):
    """The functions of a printed module (between `module ... {` and its `}`)."""
    start = text.index("{", text.index("module")) + 1
    # The module's attribute dictionary comes first: `module @m attributes {...} {`.
    head = text[text.index("module"):text.index("\n", text.index("module"))]
    start = text.index("module") + len(head)
    end = text.rstrip().rfind("}")
    return text[start:end].strip("\n")


# --- one program -------------------------------------------------------------------

class Case:
    """One JAX function at several element types.

    args(dtype, rng) -> list of numpy inputs; fn(*inputs) -> pytree of
    outputs. check(inputs, outputs, expected) -> list of (label, scalar
    residual) jnp values, or None to compare every floating output with
    JAX's. Integer outputs are always compared exactly. poly(dtype) -> the
    polymorphic_shapes of jax.export, or None."""

    def __init__(self, name, doc, fn, args, dtypes=FLOATS, check=None, poly=None, tol_scale=1.0,
                 exact_floats=False, unstable=(), unstable_names=()):
        self.name, self.doc, self.fn, self.args, self.dtypes = name, doc, fn, args, dtypes
        self.check, self.poly, self.tol_scale, self.exact_floats = check, poly, tol_scale, exact_floats
        # Custom-call routines jaxlib emits without a compatibility
        # guarantee (jax.export refuses them unless told): "gesvd", ...
        self.unstable = unstable
        self.unstable_names = unstable_names  # targets without a type letter


def amax(x):
    # (No reduce over zero dimensions for scalars: jitd's cpu codegen gives
    # such a reduce its init value, a bug reported separately.)
    return x if x.ndim == 0 else jnp.max(x)


def rel(a, b):
    a, b = jnp.asarray(a), jnp.asarray(b)
    scale = jnp.maximum(1.0, amax(jnp.abs(b))) if b.size else 1.0
    return amax(jnp.abs(a - b)) / scale if a.size else jnp.zeros((), jnp.abs(a).dtype)


def mm(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


def herm(a):
    return jnp.conj(jnp.swapaxes(a, -1, -2))


def eye_like(a):
    return jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape[:-2] + (a.shape[-1], a.shape[-1]))


def unitary_residual(q):
    """max |Q^H Q - I| (columns orthonormal)."""
    g = mm(herm(q), q)
    return jnp.max(jnp.abs(g - eye_like(g)))


def recon(a, b):
    """max |a - b| / max(1, max |b|) for a rebuilt matrix a of b."""
    return rel(a, b)


def default_check(inputs, outputs, expected):
    res = []
    for i, (o, e) in enumerate(zip(jax.tree.leaves(outputs), jax.tree.leaves(expected))):
        if jnp.issubdtype(o.dtype, jnp.inexact):
            res.append(("output %d vs JAX" % i, rel(o, e)))
    return res


def lapack_name(routine, dt):
    letter = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}[dt]
    if is_complex(dt):
        routine = {"ormqr": "unmqr", "orgqr": "ungqr", "syevd": "heevd", "sytrd": "hetrd"}.get(routine, routine)
    return "lapack_%s%s_ffi" % (letter, routine)


def export_text(fn, specs, poly=None, disabled=()):
    checks = [export.DisabledSafetyCheck.custom_call(t) for t in disabled]
    exp = export.export(jax.jit(fn), platforms=["cpu"], disabled_checks=checks)(
        *(export.symbolic_args_specs(specs, list(poly)) if poly else specs))
    return exp


def write_case(case, rng_seed):
    modules = []
    for dt in case.dtypes:
        x64 = wide(dt)
        with jax.enable_x64(x64):
            rng = np.random.default_rng(rng_seed + FLOATS.index(dt) if dt in FLOATS else rng_seed)
            inputs = [np.asarray(a) for a in case.args(dt, rng)]
            specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in inputs]
            poly = case.poly(dt) if case.poly else None
            exp = export_text(case.fn, specs, poly,
                              [lapack_name(r, dt) for r in case.unstable] + list(case.unstable_names))
            expected = exp.call(*inputs)
            flat_expected = [np.asarray(e) for e in jax.tree.leaves(expected)]
            check_fn = case.check or default_check
            labels = []

            def checker(*flat):
                n_in, n_out = len(inputs), len(flat_expected)
                ins = list(flat[:n_in])
                treedef = jax.tree.structure(expected)
                outs = jax.tree.unflatten(treedef, list(flat[n_in:n_in + n_out]))
                exps = jax.tree.unflatten(treedef, list(flat[n_in + n_out:]))
                pairs = check_fn(ins, outs, exps)
                labels[:] = [p[0] for p in pairs]
                return tuple(jnp.asarray(p[1], real_of(dt)).reshape(()) for p in pairs)

            chk_specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in inputs + flat_expected * 2]
            chk = export.export(jax.jit(checker, keep_unused=True), platforms=["cpu"])(*chk_specs)
            modules.append(assemble(case, dt, exp, inputs, flat_expected, chk, labels, poly))
    header = ["// Generated by tests/jax_export/generate.py --jax (jax %s); do not edit." % jax.__version__,
              "// " + case.doc]
    path = os.path.join(OUT_DIR, case.name + ".mlir")
    with open(path, "w") as f:
        f.write("\n".join(header) + "\n" + "\n// -----\n\n".join(modules))
    return path


def assemble(case, dt, exp, inputs, expected, chk, labels, poly):
    text = exp.mlir_module()
    if text.count("func.func public @main(") != 1:
        raise RuntimeError("%s: expected one public @main" % case.name)
    text = text.replace("func.func public @main(", "func.func private @exported(")
    chk_text = rename_symbols(strip_locations(chk.mlir_module()), "chk_")
    chk_text = chk_text.replace("func.func public @chk_main(", "func.func private @chk_main(")
    # Locations name this script's lines; keep the paths relative.
    text = text.replace(HERE + os.sep, "tests/jax_export/")
    lines = ["func.func public @main() {"]
    names = []
    for i, a in enumerate(inputs):
        lines.append("  %%in%d = stablehlo.constant %s : %s" % (i, dense(a), mlir_type(a)))
        names.append("%%in%d" % i)
    # jax.jit drops the arguments a function does not use.
    kept = sorted(exp.module_kept_var_idx)
    out_types = [mlir_type(e) for e in expected]
    lines.append("  %%out:%d = func.call @exported(%s) : (%s) -> (%s)" % (
        len(expected), ", ".join(names[i] for i in kept), ", ".join(mlir_type(inputs[i]) for i in kept),
        ", ".join(out_types)))
    outs = ["%%out#%d" % i for i in range(len(expected))]
    exp_names = []
    for i, e in enumerate(expected):
        lines.append("  %%jax%d = stablehlo.constant %s : %s" % (i, dense(e), mlir_type(e)))
        exp_names.append("%%jax%d" % i)
    rt = MLIR_TYPES[np.dtype(real_of(dt))]
    if labels:
        args = names + outs + exp_names
        types = [mlir_type(a) for a in inputs] + out_types * 2
        lines.append("  %%res:%d = func.call @chk_main(%s) : (%s) -> (%s)" % (
            len(labels), ", ".join(args), ", ".join(types), ", ".join(["tensor<%s>" % rt] * len(labels))))
    tol = TOL[real_of(dt)] * case.tol_scale
    for k, label in enumerate(labels):
        lines.append("  // %s" % label)
        lines.append("  check.expect_almost_eq_const %%res#%d, dense<0.000000e+00> : tensor<%s> "
                     "{tolerance = %.1e : f64}" % (k, rt, tol))
    for i, e in enumerate(expected):
        if not np.issubdtype(e.dtype, np.inexact) or case.exact_floats:
            lines.append("  check.expect_eq_const %s, %s : %s" % (outs[i], dense(e), mlir_type(e)))
    lines += ["  return", "}"]
    wrapper = "\n".join("  " + l for l in lines)
    body = module_body(chk_text)
    end = text.rstrip().rfind("}")
    comment = "  // %s at %s%s\n" % (case.name, np.dtype(dt).name,
                                    ", polymorphic shapes %s" % (poly,) if poly else "")
    return text[:end] + comment + wrapper + "\n" + body + "\n" + text[end:].rstrip() + "\n"


# --- inputs ------------------------------------------------------------------------

def rand(rng, shape, dt):
    x = rng.standard_normal(shape)
    if is_complex(dt):
        x = x + 1j * rng.standard_normal(shape)
    if np.issubdtype(dt, np.integer):
        return rng.integers(-4, 5, shape).astype(dt)
    return x.astype(dt)


def well_conditioned(rng, shape, dt):
    """Random square matrices plus n * I."""
    n = shape[-1]
    return (rand(rng, shape, dt) + n * np.eye(n)).astype(dt)


def hpd(rng, shape, dt):
    x = rand(rng, shape, dt)
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dt)


def hermitian(rng, shape, dt):
    x = rand(rng, shape, dt)
    return ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dt)


B = 2  # batch
N = 3  # matrix order


# --- the comparisons ---------------------------------------------------------------

def check_eig(inputs, outputs, expected):
    a = inputs[0]
    w, v = outputs
    we, _ = expected
    a = a.astype(v.dtype)
    av = mm(a, v)
    vw = v * w[..., None, :]
    norms = jnp.sqrt(jnp.sum(jnp.abs(v) ** 2, axis=-2))
    scale = jnp.maximum(1.0, jnp.max(jnp.abs(a)))
    return [("A V = V diag(w)", jnp.max(jnp.abs(av - vw)) / scale),
            ("unit eigenvectors", jnp.max(jnp.abs(norms - 1))),
            ("sum(w) = JAX's", rel(jnp.sum(w, -1), jnp.sum(we, -1))),
            ("sum(w^2) = JAX's", rel(jnp.sum(w * w, -1), jnp.sum(we * we, -1))),
            ("prod(w) = JAX's", rel(jnp.prod(w, -1), jnp.prod(we, -1)))]


def check_eigvals(inputs, outputs, expected):
    w, we = outputs, expected
    a = inputs[0].astype(w.dtype)
    tr = jnp.trace(a, axis1=-2, axis2=-1)
    return [("sum(w) = JAX's", rel(jnp.sum(w, -1), jnp.sum(we, -1))),
            ("sum(w) = trace(A)", rel(jnp.sum(w, -1), tr)),
            ("sum(w^2) = JAX's", rel(jnp.sum(w * w, -1), jnp.sum(we * we, -1))),
            ("prod(w) = JAX's", rel(jnp.prod(w, -1), jnp.prod(we, -1)))]


def check_eigh(inputs, outputs, expected):
    a = inputs[0]
    w, v = outputs
    we, _ = expected
    av = mm(a, v)
    vw = v * w[..., None, :].astype(v.dtype)
    return [("eigenvalues vs JAX", rel(w, we)),
            ("A V = V diag(w)", recon(av, vw)),
            ("V^H V = I", unitary_residual(v))]


def check_qr(inputs, outputs, expected):
    a = inputs[0]
    q, r, qc, rc = outputs
    return [("Q R = A", recon(mm(q, r), a)), ("Q^H Q = I", unitary_residual(q)),
            ("R upper triangular", jnp.max(jnp.abs(jnp.tril(r, -1)))),
            ("|diag R| vs JAX", rel(jnp.abs(jnp.diagonal(r, 0, -2, -1)),
                                     jnp.abs(jnp.diagonal(expected[1], 0, -2, -1)))),
            ("complete: Q R = A", recon(mm(qc, rc), a)), ("complete: Q^H Q = I", unitary_residual(qc)),
            ("complete: R upper triangular", jnp.max(jnp.abs(jnp.tril(rc, -1))))]


def check_svd(inputs, outputs, expected):
    a = inputs[0]
    (u, s, vh), (uf, sf, vhf) = outputs
    se = expected[0][1]
    us = u * s[..., None, :].astype(u.dtype)
    k = s.shape[-1]
    usf = uf[..., :, :k] * sf[..., None, :].astype(uf.dtype)
    return [("singular values vs JAX", rel(s, se)),
            ("U diag(s) V^H = A", recon(mm(us, vh), a)),
            ("U^H U = I", unitary_residual(u)), ("V V^H = I", unitary_residual(herm(vh))),
            ("full: singular values vs JAX", rel(sf, se)),
            ("full: U diag(s) V^H = A", recon(mm(usf, vhf[..., :k, :]), a)),
            ("full: U^H U = I", unitary_residual(uf)), ("full: V V^H = I", unitary_residual(herm(vhf)))]


def check_schur(inputs, outputs, expected):
    a = inputs[0]
    t, z = outputs
    lower = jnp.tril(t, -1 if is_complex(t.dtype) else -2)
    return [("Z T Z^H = A", recon(mm(mm(z, t), herm(z)), a)), ("Z^H Z = I", unitary_residual(z)),
            ("T (quasi-)upper triangular", jnp.max(jnp.abs(lower))),
            ("trace(T) vs JAX", rel(jnp.trace(t), jnp.trace(expected[0])))]


def check_hessenberg(inputs, outputs, expected):
    a = inputs[0]
    h, q = outputs
    return [("Q H Q^H = A", recon(mm(mm(q, h), herm(q)), a)), ("Q^H Q = I", unitary_residual(q)),
            ("H upper Hessenberg", jnp.max(jnp.abs(jnp.tril(h, -2)))),
            ("|H| vs JAX", rel(jnp.abs(h), jnp.abs(expected[0])))]


def check_lu(inputs, outputs, expected):
    a = inputs[0]
    p, l, u = outputs
    return [("P L U = A", recon(mm(mm(p, l), u), a)), ("L vs JAX", rel(l, expected[1])),
            ("U vs JAX", rel(u, expected[2]))]


def check_qr_pivoting(inputs, outputs, expected):
    a = inputs[0]
    q, r, p = outputs
    return [("Q R = A[:, P]", recon(mm(q, r), a[:, p])), ("Q^H Q = I", unitary_residual(q)),
            ("R upper triangular", jnp.max(jnp.abs(jnp.tril(r, -1)))),
            ("|diag R| decreasing", jnp.maximum(0, jnp.max(jnp.diff(jnp.abs(jnp.diagonal(r)))))),
            ("|diag R| vs JAX", rel(jnp.abs(jnp.diagonal(r)), jnp.abs(jnp.diagonal(expected[1]))))]


def check_svd_qr(inputs, outputs, expected):
    a = inputs[0]
    u, s, vh = outputs
    us = u * s[..., None, :].astype(u.dtype)
    return [("singular values vs JAX", rel(s, expected[1])), ("U diag(s) V^H = A", recon(mm(us, vh), a)),
            ("U^H U = I", unitary_residual(u)), ("V V^H = I", unitary_residual(herm(vh)))]


def tridiagonal_matrix(dl, d, du):
    return jax.vmap(lambda a, b, c: jnp.diag(b) + jnp.diag(a[1:], -1) + jnp.diag(c[:-1], 1))(dl, d, du)


def check_tridiagonal_perturbed(inputs, outputs, expected):
    # Batch member 0 is regular: its solution against JAX's and T x = b.
    # Member 1 is singular: x is large and T x = b up to eps |T| |x| (the
    # perturbation), and x's direction (a null vector) is JAX's.
    dl, d, du, b = inputs
    x, xe = outputs, expected
    t = tridiagonal_matrix(dl, d, du)
    r1 = mm(t[1], x[1]) - b[1]
    unit = lambda v: jnp.abs(v) / jnp.max(jnp.abs(v))  # noqa: E731
    return [("regular: x vs JAX", rel(x[0], xe[0])), ("regular: T x = b", recon(mm(t[0], x[0]), b[0])),
            ("singular: T x = b up to eps |T| |x|",
             jnp.max(jnp.abs(r1)) / (jnp.max(jnp.abs(t[1])) * jnp.max(jnp.abs(x[1])))),
            ("singular: |x| / max |x| vs JAX's", rel(unit(x[1]), unit(xe[1]))),
            ("singular: x is large", jnp.maximum(0.0, 1.0 - jnp.max(jnp.abs(x[1])) * 1e-4))]


def check_poly_factorizations(inputs, outputs, expected):
    a, h = inputs
    (w, v), (u, s, vh), (q, r), eigsum, lu, inv = outputs
    us = u * s[..., None, :].astype(u.dtype)
    tr = jnp.trace(a, axis1=-2, axis2=-1)
    return [("eigh: w vs JAX", rel(w, expected[0][0])),
            ("eigh: A V = V diag(w)", recon(mm(h, v), v * w[..., None, :].astype(v.dtype))),
            ("svd: s vs JAX", rel(s, expected[1][1])), ("svd: U diag(s) V^H = A", recon(mm(us, vh), a)),
            ("qr: Q R = A", recon(mm(q, r), a)), ("qr: Q^H Q = I", unitary_residual(q)),
            ("eig: sum(w) = trace(A)", rel(eigsum, tr.astype(eigsum.dtype))),
            ("lu_factor vs JAX", rel(lu, expected[4])), ("inv: A inv(A) = I", recon(mm(a, inv), eye_like(a)))]


def check_inv(inputs, outputs, expected):
    a = inputs[0]
    return [("inv vs JAX", rel(outputs, expected)), ("A inv(A) = I", recon(mm(a, outputs), eye_like(a)))]


def check_solve(inputs, outputs, expected):
    a, b = inputs
    return [("x vs JAX", rel(outputs, expected)), ("A x = b", recon(mm(a, outputs), b))]


def check_pinv(inputs, outputs, expected):
    a = inputs[0]
    x = outputs
    return [("pinv vs JAX", rel(x, expected)), ("A X A = A", recon(mm(mm(a, x), a), a)),
            ("X A X = X", recon(mm(mm(x, a), x), x))]


def check_cholesky(inputs, outputs, expected):
    a = inputs[0]
    return [("L vs JAX", rel(outputs, expected)), ("L L^H = A", recon(mm(outputs, herm(outputs)), a))]


# --- the cases ---------------------------------------------------------------------

def linalg_cases():
    la = jnp.linalg
    sq = lambda dt, rng: [well_conditioned(rng, (B, N, N), dt)]  # noqa: E731
    # jnp.linalg.det / slogdet of order <= 3 are closed formulas; 4 goes through LU.
    sq4 = lambda dt, rng: [well_conditioned(rng, (B, 4, 4), dt)]  # noqa: E731
    cases = [
        Case("linalg_cholesky", "jnp.linalg.cholesky of Hermitian positive definite matrices",
             la.cholesky, lambda dt, rng: [hpd(rng, (B, N, N), dt)], check=check_cholesky),
        Case("linalg_cond", "jnp.linalg.cond (2-norm, through the SVD) and with p = 'fro'",
             lambda a: (la.cond(a), la.cond(a, "fro")), sq),
        Case("linalg_cross", "jnp.linalg.cross of 3-vectors",
             la.cross, lambda dt, rng: [rand(rng, (B, 3), dt), rand(rng, (B, 3), dt)],
             dtypes=FLOATS + [np.int32]),
        Case("linalg_det", "jnp.linalg.det (LU: getrf, diagonal product, pivot parity)", la.det, sq4),
        Case("linalg_diagonal", "jnp.linalg.diagonal, offsets 0 and 1",
             lambda a: (la.diagonal(a), la.diagonal(a, offset=1)),
             lambda dt, rng: [rand(rng, (B, 3, 4), dt)], dtypes=FLOATS + [np.int32]),
        Case("linalg_eig", "jnp.linalg.eig (geev): A V = V diag(w), unit columns, order-free "
             "sums of w against JAX's", la.eig, lambda dt, rng: [rand(rng, (B, N, N), dt)],
             check=check_eig, tol_scale=10),
        Case("linalg_eigh", "jnp.linalg.eigh (syevd / heevd): w against JAX's, A V = V diag(w), "
             "V^H V = I", la.eigh, lambda dt, rng: [hermitian(rng, (B, N, N), dt)], check=check_eigh,
             tol_scale=10),
        Case("linalg_eigvals", "jnp.linalg.eigvals (geev without vectors): order-free sums",
             la.eigvals, lambda dt, rng: [rand(rng, (B, N, N), dt)], check=check_eigvals, tol_scale=10),
        Case("linalg_eigvalsh", "jnp.linalg.eigvalsh (syevd / heevd, mode 'N')",
             la.eigvalsh, lambda dt, rng: [hermitian(rng, (B, N, N), dt)], tol_scale=10),
        Case("linalg_inv", "jnp.linalg.inv (getrf, then trsm twice)", la.inv, sq, check=check_inv,
             tol_scale=10),
        Case("linalg_lstsq", "jnp.linalg.lstsq of a full-rank 4 x 3 system (SVD): x, residuals, "
             "rank, singular values", lambda a, b: la.lstsq(a, b),
             lambda dt, rng: [rand(rng, (4, 3), dt), rand(rng, (4, 2), dt)], tol_scale=10),
        Case("linalg_matmul", "jnp.linalg.matmul of batched matrices", la.matmul,
             lambda dt, rng: [rand(rng, (B, 3, 4), dt), rand(rng, (B, 4, 2), dt)],
             dtypes=FLOATS + [np.int32]),
        Case("linalg_matrix_norm", "jnp.linalg.matrix_norm: 'fro', 'nuc', 2, -2, 1, -1, inf, -inf",
             lambda a: tuple(la.matrix_norm(a, ord=o) for o in ("fro", "nuc", 2, -2, 1, -1, jnp.inf, -jnp.inf)),
             lambda dt, rng: [rand(rng, (B, 4, 3), dt)], tol_scale=10),
        Case("linalg_matrix_power", "jnp.linalg.matrix_power, n = 3, 0 and -2 (through inv)",
             lambda a: (la.matrix_power(a, 3), la.matrix_power(a, 0), la.matrix_power(a, -2)), sq,
             tol_scale=10),
        Case("linalg_matrix_rank", "jnp.linalg.matrix_rank of rank-2 and rank-3 3 x 3 matrices",
             la.matrix_rank,
             lambda dt, rng: [np.stack([(rand(rng, (3, 2), dt) @ rand(rng, (2, 3), dt)).astype(dt),
                                        well_conditioned(rng, (3, 3), dt)])]),
        Case("linalg_matrix_transpose", "jnp.linalg.matrix_transpose", la.matrix_transpose,
             lambda dt, rng: [rand(rng, (B, 3, 4), dt)], dtypes=FLOATS + [np.int32]),
        Case("linalg_multi_dot", "jnp.linalg.multi_dot of three matrices", lambda a, b, c: la.multi_dot([a, b, c]),
             lambda dt, rng: [rand(rng, (2, 3), dt), rand(rng, (3, 4), dt), rand(rng, (4, 2), dt)],
             dtypes=FLOATS + [np.int32]),
        Case("linalg_norm", "jnp.linalg.norm: vector ords None, 1, 2, inf, -inf, 0, 3; matrix 'fro', 'nuc', 2",
             lambda v, a: tuple([la.norm(v, ord=o, axis=-1) for o in (None, 1, 2, jnp.inf, -jnp.inf, 0, 3)] +
                                [la.norm(a, ord=o, axis=(-2, -1)) for o in ("fro", "nuc", 2)]),
             lambda dt, rng: [rand(rng, (B, 5), dt), rand(rng, (B, 3, 3), dt)], tol_scale=10),
        Case("linalg_outer", "jnp.linalg.outer", la.outer,
             lambda dt, rng: [rand(rng, (3,), dt), rand(rng, (4,), dt)], dtypes=FLOATS + [np.int32]),
        Case("linalg_pinv", "jnp.linalg.pinv of a full-rank 4 x 3 matrix (SVD): against JAX's and "
             "the Penrose conditions", la.pinv, lambda dt, rng: [rand(rng, (B, 4, 3), dt)],
             check=check_pinv, tol_scale=10),
        Case("linalg_qr", "jnp.linalg.qr, modes 'reduced' and 'complete' (geqrf, orgqr / ungqr): "
             "Q R = A, Q^H Q = I, R triangular", lambda a: la.qr(a) + la.qr(a, mode="complete"),
             lambda dt, rng: [rand(rng, (B, 4, 3), dt)], check=check_qr, tol_scale=10),
        Case("linalg_slogdet", "jnp.linalg.slogdet (sign and log|det|)", la.slogdet, sq4),
        Case("linalg_solve", "jnp.linalg.solve (getrf, trsm)", la.solve,
             lambda dt, rng: [well_conditioned(rng, (B, N, N), dt), rand(rng, (B, N, 2), dt)],
             check=check_solve, tol_scale=10),
        Case("linalg_svd", "jnp.linalg.svd, full_matrices False and True (gesdd): s against "
             "JAX's, U diag(s) V^H = A, U and V unitary",
             lambda a: (la.svd(a, full_matrices=False), la.svd(a, full_matrices=True)),
             lambda dt, rng: [rand(rng, (B, 4, 3), dt)], check=check_svd, tol_scale=10),
        Case("linalg_svdvals", "jnp.linalg.svdvals (gesdd, mode 'N')", la.svdvals,
             lambda dt, rng: [rand(rng, (B, 4, 3), dt)], tol_scale=10),
        Case("linalg_tensordot", "jnp.linalg.tensordot over two axes",
             lambda a, b: la.tensordot(a, b, axes=2),
             lambda dt, rng: [rand(rng, (2, 3, 4), dt), rand(rng, (3, 4, 5), dt)], dtypes=FLOATS + [np.int32]),
        Case("linalg_tensorinv", "jnp.linalg.tensorinv of a (2, 3, 6) tensor, ind = 2",
             lambda a: la.tensorinv(a, ind=2),
             lambda dt, rng: [well_conditioned(rng, (6, 6), dt).reshape(2, 3, 6)], tol_scale=10),
        Case("linalg_tensorsolve", "jnp.linalg.tensorsolve of a (2, 3, 6) tensor",
             la.tensorsolve,
             lambda dt, rng: [well_conditioned(rng, (6, 6), dt).reshape(2, 3, 6), rand(rng, (2, 3), dt)],
             tol_scale=10),
        Case("linalg_trace", "jnp.linalg.trace, offsets 0 and -1",
             lambda a: (la.trace(a), la.trace(a, offset=-1)), lambda dt, rng: [rand(rng, (B, 3, 4), dt)],
             dtypes=FLOATS + [np.int32]),
        Case("linalg_vecdot", "jnp.linalg.vecdot (conjugates its first operand)", la.vecdot,
             lambda dt, rng: [rand(rng, (B, 4), dt), rand(rng, (B, 4), dt)], dtypes=FLOATS + [np.int32]),
        Case("linalg_vector_norm", "jnp.linalg.vector_norm: ords 2, 1, inf, -inf, 0, 0.5, over all and one axis",
             lambda x: tuple([la.vector_norm(x, ord=o) for o in (2, 1, jnp.inf, -jnp.inf, 0, 0.5)] +
                             [la.vector_norm(x, axis=1)]),
             lambda dt, rng: [rand(rng, (B, 5), dt)], tol_scale=10),
        # jax.scipy.linalg and lax.linalg: the factorizations jnp.linalg lacks.
        Case("scipy_schur", "jax.scipy.linalg.schur (gees): Z T Z^H = A, Z unitary, T (quasi-)triangular",
             jax.scipy.linalg.schur, lambda dt, rng: [rand(rng, (4, 4), dt)], check=check_schur, tol_scale=10),
        Case("scipy_hessenberg", "jax.scipy.linalg.hessenberg with Q (gehrd, orghr as householder_product)",
             lambda a: jax.scipy.linalg.hessenberg(a, calc_q=True), lambda dt, rng: [rand(rng, (4, 4), dt)],
             check=check_hessenberg, tol_scale=10),
        Case("scipy_lu", "jax.scipy.linalg.lu (getrf): P L U = A, L and U against JAX's",
             jax.scipy.linalg.lu, lambda dt, rng: [rand(rng, (4, 4), dt)], check=check_lu, tol_scale=10),
        Case("scipy_solve_triangular", "jax.scipy.linalg.solve_triangular, lower and upper, "
             "transposed (trsm)",
             lambda a, b: (jax.scipy.linalg.solve_triangular(a, b, lower=True),
                           jax.scipy.linalg.solve_triangular(a, b, lower=False, trans=1),
                           jax.scipy.linalg.solve_triangular(a, b, lower=True, trans=2, unit_diagonal=True)),
             lambda dt, rng: [well_conditioned(rng, (B, N, N), dt), rand(rng, (B, N, 2), dt)], tol_scale=10),
        Case("scipy_cho_solve", "jax.scipy.linalg.cho_factor then cho_solve (potrf, trsm)",
             lambda a, b: jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a, lower=True), b),
             lambda dt, rng: [hpd(rng, (N, N), dt), rand(rng, (N, 2), dt)], tol_scale=10),
 Case("scipy_qr_pivoting", "jax.scipy.linalg.qr(pivoting=True) (geqp3, orgqr / ungqr): "
             "Q R = A P, Q unitary, R triangular with |diag R| decreasing (geqp3 has no compatibility guarantee)",
             lambda a: jax.scipy.linalg.qr(a, mode="economic", pivoting=True),
             lambda dt, rng: [rand(rng, (5, 3), dt)], check=check_qr_pivoting, tol_scale=10, unstable=("geqp3",)),
        Case("lax_svd_qr_algorithm", "jax.lax.linalg.svd(algorithm=SvdAlgorithm.QR) (gesvd, which jaxlib "
             "emits without a compatibility guarantee)",
             lambda a: lax.linalg.svd(a, full_matrices=False, algorithm=lax.linalg.SvdAlgorithm.QR),
             lambda dt, rng: [rand(rng, (B, 4, 3), dt)], check=check_svd_qr, tol_scale=10, unstable=("gesvd",)),
        Case("lax_ormqr", "jax.lax.linalg.ormqr: Q^H c and c Q from geqrf's reflectors (ormqr / unmqr, "
             "emitted without a compatibility guarantee)",
             lambda a, c, d: (lax.linalg.ormqr(*lax_linalg.geqrf(a), c, left=True, transpose=True),
                              lax.linalg.ormqr(*lax_linalg.geqrf(a), d, left=False, transpose=False)),
             lambda dt, rng: [rand(rng, (B, 4, 3), dt), rand(rng, (B, 4, 2), dt), rand(rng, (B, 2, 4), dt)],
             tol_scale=10, unstable=("ormqr",)),
        Case("lax_tridiagonal_solve_perturbed", "jax.lax.linalg.tridiagonal_solve(perturb_singular=True) "
             "(tridiagonal_solve_perturbed_ffi) of a regular and a singular matrix",
             lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True),
             lambda dt, rng: [np.array([[0, 0.5, -1], [0, 1, 1]], dt), np.array([[3, 2.5, 4], [1, 2, 1]], dt),
                              np.array([[1, -0.5, 0], [1, 1, 0]], dt), rand(rng, (B, 3, 2), dt)],
             check=check_tridiagonal_perturbed, tol_scale=10, unstable_names=("tridiagonal_solve_perturbed_ffi",)),
        Case("lax_tridiagonal_solve", "jax.lax.linalg.tridiagonal_solve (gtsv)",
             lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d, du, b),
             lambda dt, rng: [np.concatenate([np.zeros((B, 1), dt), rand(rng, (B, 3), dt)], 1),
                              (rand(rng, (B, 4), dt) + 4).astype(dt),
                              np.concatenate([rand(rng, (B, 3), dt), np.zeros((B, 1), dt)], 1),
                              rand(rng, (B, 4, 2), dt)], tol_scale=10),
    ]
    return cases


def poly_cases():
    la = jnp.linalg
    sym = lambda s: (lambda dt: (s,))  # noqa: E731
    return [
        Case("poly_cholesky", "jnp.linalg.cholesky with a symbolic batch b (shape_assertion, custom "
             "call results sized from the dimension)", la.cholesky,
             lambda dt, rng: [hpd(rng, (3 if wide(dt) else 2, N, N), dt)], poly=sym("b, 3, 3"),
             check=check_cholesky),
        Case("poly_det_solve", "jnp.linalg.det and solve with a symbolic batch b and order n",
             lambda a, b: (la.det(a), la.solve(a, b)),
             lambda dt, rng: [well_conditioned(rng, (2, 4, 4), dt), rand(rng, (2, 4, 1), dt)],
             poly=lambda dt: ("b, n, n", "b, n, 1"), tol_scale=10, dtypes=[np.float32, np.complex128]),
        Case("poly_factorizations", "eigh, svd, qr, eig, lu and inv with a symbolic batch b (every custom call "
             "sized from the dimension through indices_of_shape_operands)",
             lambda a, h: (la.eigh(h), la.svd(a, full_matrices=False), la.qr(a), la.eig(a)[0].sum(-1),
                           jax.scipy.linalg.lu_factor(a)[0], la.inv(a)),
             lambda dt, rng: [well_conditioned(rng, (3, N, N), dt), hermitian(rng, (3, N, N), dt)],
             poly=lambda dt: ("b, 3, 3", "b, 3, 3"), check=check_poly_factorizations, tol_scale=10),
        Case("poly_dense", "a dense layer, reductions and reshapes of a (b, 4) input, b symbolic",
             lambda x, w: (jnp.tanh(x @ w).sum(axis=0), x.reshape(-1), jnp.concatenate([x, x], 0).mean()),
             lambda dt, rng: [rand(rng, (5, 4), dt), rand(rng, (4, 3), dt)], dtypes=[np.float32, np.float64],
             poly=lambda dt: ("b, 4", "4, 3")),
        Case("poly_top_k", "lax.top_k with k = n of a (3, 2n) input, n symbolic "
             "(custom_call @stablehlo.dynamic_top_k)", lambda x: lax.top_k(jnp.concatenate([x, x - 1], 1), x.shape[-1]),
             lambda dt, rng: [rand(rng, (3, 7), dt)], dtypes=[np.float32, np.float64, np.int32],
             poly=sym("3, n")),
        Case("approx_top_k", "lax.approx_max_k and approx_min_k with a constant k along either dimension "
             "(custom_call @ApproxTopK; exact on CPU)",
             lambda x: (lax.approx_max_k(x, 3), lax.approx_min_k(x, 2, reduction_dimension=0)),
             lambda dt, rng: [rand(rng, (4, 6), dt)], dtypes=[np.float32, np.float64]),
        Case("poly_approx_max_k", "lax.approx_max_k with k = n of a (3, 2n) input, n symbolic "
             "(custom_call @stablehlo.dynamic_approx_top_k; exact on CPU)",
             lambda x: lax.approx_max_k(jnp.concatenate([x, x - 1], 1), k=x.shape[-1]),
             lambda dt, rng: [rand(rng, (3, 7), dt)], dtypes=[np.float32], poly=sym("3, n")),
        Case("poly_rng_bit_generator", "jax.random with the 'rbg' implementation for an (n, 3) "
             "shape, n symbolic (custom_call @stablehlo.dynamic_rng_bit_generator)",
             lambda x: (jax.random.bits(jax.random.key(7, impl="rbg"), x.shape),
                        jax.random.uniform(jax.random.key(8, impl="rbg"), x.shape, x.dtype)),
             lambda dt, rng: [rand(rng, (4, 3), dt)], dtypes=[np.float32, np.float64],
             poly=sym("n, 3"), exact_floats=True),
    ]


def random_cases():
    def threefry(seed, logits):
        k = jax.random.key(seed)
        k1, k2, k3 = jax.random.split(k, 3)
        dt = logits.dtype
        return (jax.random.uniform(k1, (3, 4), dt), jax.random.normal(k2, (5,), dt),
                jax.random.randint(k3, (6,), 0, 10), jax.random.bernoulli(k1, 0.3, (8,)),
                jax.random.permutation(k2, 10), jax.random.categorical(k3, logits),
                jax.random.key_data(jax.random.fold_in(k, 7)),
                jax.random.truncated_normal(k3, -1.0, 2.0, (4,), dt),
                jax.random.gamma(k1, jnp.asarray([0.5, 1.0, 3.0], dt)),
                jax.random.exponential(k2, (3,), dt))

    def rbg(seed):
        k = jax.random.key(seed, impl="rbg")
        k1, k2 = jax.random.split(k)
        return (jax.random.bits(k1, (4, 3)), jax.random.uniform(k2, (5,)), jax.random.randint(k, (6,), -5, 5))

    return [
        Case("random_threefry", "jax.random (threefry2x32): split, fold_in, uniform, normal, randint, "
             "bernoulli, permutation, categorical, truncated_normal, gamma, exponential",
             threefry, lambda dt, rng: [np.asarray(42, np.int32 if not wide(dt) else np.int64),
                                        rand(rng, (2, 5), dt)], dtypes=[np.float32]),
        Case("random_rbg", "jax.random with the 'rbg' implementation (stablehlo.rng_bit_generator, "
             "XLA's default algorithm): bits, uniform, randint", rbg,
             lambda dt, rng: [np.asarray(3, np.int32)], dtypes=[np.float32], exact_floats=True),
    ]


def control_cases():
    def scan(xs, c0):
        def step(c, x):
            c = 0.9 * c + jnp.sin(x)
            return c, c * 2
        c, ys = lax.scan(step, c0, xs)
        cr, ysr = lax.scan(step, c0, xs, reverse=True)
        return c, ys, cr, ysr, lax.associative_scan(jnp.add, xs), jnp.cumprod(xs, axis=0)

    def loops(x):
        # Newton's iteration for sqrt, until it converges (a data-dependent trip count).
        def cond(s):
            y, i = s
            return jnp.logical_and(jnp.max(jnp.abs(y * y - x)) > 1e-5 * jnp.max(x), i < 50)

        def body(s):
            y, i = s
            return 0.5 * (y + x / y), i + 1
        y, iters = lax.while_loop(cond, body, (x, 0))
        p = lax.fori_loop(0, 5, lambda i, acc: acc * x + i, jnp.ones_like(x))
        br = lax.cond(jnp.sum(x) > 0, lambda v: v * 2, lambda v: -v, x)
        sw = lax.switch(2, [jnp.sin, jnp.cos, jnp.exp], x)
        mp = lax.map(lambda r: jnp.dot(r, r), x.reshape(2, -1))
        return y, iters, p, br, sw, mp

    return [
        Case("lax_scan", "lax.scan forward and reverse with a carry, associative_scan, cumprod",
             scan, lambda dt, rng: [rand(rng, (5, 3), dt), rand(rng, (3,), dt)], dtypes=[np.float32, np.float64]),
        Case("lax_while", "lax.while_loop (Newton's sqrt to convergence), fori_loop, cond, switch, map",
             loops, lambda dt, rng: [(np.abs(rand(rng, (6,), dt)) + 0.5).astype(dt)],
             dtypes=[np.float32, np.float64]),
    ]


def model_cases():
    import flax.linen as nn

    class Block(nn.Module):
        """A small transformer block and classifier."""

        @nn.compact
        def __call__(self, x):
            h = nn.LayerNorm()(x)
            h = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=8)(h, h)
            x = x + h
            h = nn.LayerNorm()(x)
            h = nn.Dense(16)(h)
            h = nn.gelu(h)
            x = x + nn.Dense(8)(h)
            return jax.nn.log_softmax(nn.Dense(5)(x.mean(axis=1)))

    class Cnn(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(4, (3, 3))(x)
            x = nn.relu(x)
            x = nn.avg_pool(x, (2, 2), (2, 2))
            x = nn.Conv(6, (3, 3), strides=(2, 2), padding="VALID")(x)
            x = nn.BatchNorm(use_running_average=True)(x)
            x = jnp.max(x, axis=(1, 2))
            return nn.Dense(3)(x)

    def make(model, x_shape):
        variables = model.init(jax.random.key(0), jnp.zeros(x_shape, jnp.float32))
        leaves, treedef = jax.tree.flatten(variables)

        def fn(*args):
            return model.apply(jax.tree.unflatten(treedef, list(args[:-1])), args[-1])

        def args(dt, rng):
            return [np.asarray(l) for l in leaves] + [rand(rng, x_shape, dt)]
        return fn, args

    block_fn, block_args = make(Block(), (2, 4, 8))
    cnn_fn, cnn_args = make(Cnn(), (2, 8, 8, 3))
    return [
        Case("model_transformer_block", "a Flax transformer block (LayerNorm, two-head attention, "
             "gelu MLP, log_softmax classifier), its parameters as arguments",
             block_fn, block_args, dtypes=[np.float32], tol_scale=5),
        Case("model_cnn", "a Flax CNN (convolutions, relu, avg_pool, BatchNorm, max, Dense), its "
             "parameters as arguments", cnn_fn, cnn_args, dtypes=[np.float32], tol_scale=5),
    ]


def all_cases():
    return linalg_cases() + poly_cases() + random_cases() + control_cases() + model_cases()


def main(only=None):
    os.makedirs(OUT_DIR, exist_ok=True)
    written = []
    for case in all_cases():
        if only and not any(o in case.name for o in only):
            continue
        seed = sum(map(ord, case.name))
        written.append(write_case(case, seed))
        print("wrote", os.path.relpath(written[-1], HERE))
    return written
