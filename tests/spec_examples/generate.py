#!/usr/bin/env python3
"""Turns every ```mlir example of spec.md's "## Ops" section into a
self-checking program for `jitd conformance` (one file per example).

The example text is kept as the spec writes it; around it this script puts
what makes it a program: the inputs the spec gives in comments before the op
(`// %operand: [-2, 0, 2]`) become stablehlo.constant ops of the types the
op's signature names, and the results the spec gives after it
(`// %result: [2, 0, 2]`) become check.expect_*_const ops. An example
without values still runs (its operands are zeros; no checks). An example
the spec runs on several processes (`// num_replicas: 2`, values given per
process as `// %x@(0, 0): ...`) becomes a function @process that @main runs
on every process of the grid through the reference interpreter's
`interpreter.run_parallel`, checking every process's results. An example
without a grid whose replica_groups (cross_replica mode: no channel_handle)
or source_target_pairs name several replicas runs on that many replicas.

Deterministic: the same spec.md gives the same files. Run it once, commit
its output; re-run it only when the spec changes:

    python3 tests/spec_examples/generate.py ../shared/reference/stablehlo/spec.md

(chlo.md has no examples: its ops are covered by tests of their own.)
"""
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

EPS = {"f16": 9.8e-4, "bf16": 7.9e-3, "f32": 1.2e-7, "f64": 2.3e-16,
       "complex<f32>": 1.2e-7, "complex<f64>": 2.3e-16}


def examples(spec_text):
    """(op heading, line number, block lines) for each ```mlir block of ## Ops."""
    out, op, block, start, inside = [], None, None, 0, False
    for number, line in enumerate(spec_text.splitlines(), 1):
        if line.startswith("## "):
            inside = line == "## Ops"
            continue
        if not inside:
            continue
        m = re.match(r"^### ([a-z_0-9]+)$", line)
        if m:
            op = m.group(1)
        elif line.strip() == "```mlir" and op:
            block, start = [], number
        elif line.strip() == "```" and block is not None:
            out.append((op, start, block))
            block = None
        elif block is not None:
            block.append(line)
    return out


def split_comments(block):
    """(comments before the code, code lines, comments after it)."""
    is_code = [bool(l.strip()) and not l.strip().startswith("//") for l in block]
    if not any(is_code):
        return [], [], []
    first = is_code.index(True)
    last = len(block) - 1 - is_code[::-1].index(True)
    pre = [l.strip() for l in block[:first] if l.strip()]
    post = [l.strip() for l in block[last + 1:] if l.strip()]
    code = [l for l in block[first:last + 1] if not l.strip().startswith("//")]
    return pre, code, post


def value_entries(comment_lines):
    """{name: value text} from `// %name: value` lines (continuations joined).
    Keys keep a process suffix: '%x@(0, 0)'."""
    entries, order, key = {}, [], None
    for line in comment_lines:
        # A trailing comment after a value: `[0.0, 1.57] // [0.0, pi/2]`.
        body = line[2:].split("//")[0].strip()
        # `// %x: value`, and `// %x = value` as a few examples write it.
        m = re.match(r"^(%[\w#]+(?:@\(\d+, *\d+\))?|[a-z_]+)\s*[:=]\s*(.*)$", body)
        if m:
            key = m.group(1).replace(" ", "")
            entries[key] = m.group(2)
            order.append(key)
        elif key is not None and re.match(r"^[\[\]()\d+\-.,]", body):
            entries[key] += " " + body
        else:
            key = None  # prose: `// Logical values: +NaN, -1.0, ...`
    return {k: v.strip() for k, v in entries.items()}, order


def split_examples(block):
    """A block holding several examples (negate's integer and complex ones)
    split where code redefines a name the previous example defined; each
    piece takes the comment lines up to its code."""
    pieces, current, defined = [], [], set()
    for line in block:
        s = line.strip()
        # Definitions at the block's top level (not inside regions).
        m = re.match(r"^(%\w+)(?::\d+)?\s*(?:,\s*%\w+\s*)*=", line)
        if m and m.group(1) in defined and current:
            # Comments right above the code belong to the new example.
            k = len(current)
            while k > 0 and (current[k - 1].strip().startswith("//") or not current[k - 1].strip()):
                k -= 1
            # ... but results of the previous one stay with it.
            post, pre = [], []
            for c in current[k:]:
                name = re.match(r"^//\s*(%[\w#]+)", c.strip())
                if name and not pre and (name.group(1) in defined or
                                         re.sub(r"\d+$", "", name.group(1)) in defined or
                                         name.group(1).split("#")[0] in defined):
                    post.append(c)
                elif not name and not pre and post:
                    post.append(c)  # a result's value continued
                elif c.strip():
                    pre.append(c)
            pieces.append(current[:k] + post)
            current, defined = pre, set()
        current.append(line)
        if m:
            defined.update(re.findall(r"%\w+", line.split("=")[0]))
    pieces.append(current)
    return pieces


def split_top(text, sep=","):
    """Splits at `sep` outside (), [], {}, <>."""
    parts, depth, cur, i = [], 0, "", 0
    while i < len(text):
        c = text[i]
        if text.startswith("->", i):
            cur += "->"
            i += 2
            continue
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        if c == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    if cur.strip():
        parts.append(cur.strip())
    return parts


def signatures(code):
    """For each generic top-level op `%r = "d.op"(%a, %b) ... : (A, B) -> R`:
    (result names, operand names, operand types, result types)."""
    text = "\n".join(code)
    ops = []
    for m in re.finditer(r'((?:%[\w]+(?::\d+)?\s*,\s*)*%[\w]+(?::\d+)?)?\s*=?\s*"(?:stablehlo|chlo)\.[\w\-]+"\(([^()]*)\)', text):
        # Find the `:` that starts the signature, outside brackets.
        depth, i = 0, m.end()
        while i < len(text):
            c = text[i]
            if text.startswith("->", i):
                i += 2
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth < 0:
                    break
            elif c == ":" and depth == 0:
                break
            i += 1
        if i >= len(text) or text[i] != ":":
            continue
        sig = text[i + 1:]
        # inputs: the parenthesized list; results: after "->" to the line end
        # or the balanced parenthesized list.
        sig = sig.lstrip()
        if not sig.startswith("("):
            continue
        depth, j = 0, 0
        for j, c in enumerate(sig):
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    break
        ins = split_top(sig[1:j])
        rest = sig[j + 1:].lstrip()
        if not rest.startswith("->"):
            continue
        rest = rest[2:].lstrip()
        if rest.startswith("("):
            depth = 0
            for k, c in enumerate(rest):
                if c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                    if depth == 0:
                        break
            outs = split_top(rest[1:k])
        else:
            outs = [rest.split("\n")[0].strip()]
        names = []
        if m.group(1):
            for r in split_top(m.group(1)):
                if ":" in r:
                    base, n = r.split(":")
                    names += ["%s#%d" % (base.strip(), x) for x in range(int(n))]
                else:
                    names.append(r.strip())
        operands = [o.strip() for o in m.group(2).split(",") if o.strip()]
        ops.append((names, operands, ins, outs))
    return ops


def element_type(t):
    m = re.match(r"^tensor<(?:[\d?x]*x)?(.+)>$", t.replace(" ", ""))
    if not m:
        return None
    return m.group(1)


def hexfloat(value, et):
    """inf / nan spelled as the bits MLIR's dense parser takes."""
    import struct
    v = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "nan": math.nan,
         "-nan": math.nan}[value]
    if et in ("f32", "complex<f32>"):
        return "0x%08X" % struct.unpack("<I", struct.pack("<f", v))[0]
    if et in ("f64", "complex<f64>"):
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", v))[0]
    if et == "f16":
        return "0x%04X" % struct.unpack("<H", struct.pack("<e", v))[0]
    if et == "bf16":
        return "0x%04X" % (struct.unpack("<I", struct.pack("<f", v))[0] >> 16)
    return value


def dense(value, t):
    et = element_type(t) or ""
    v = re.sub(r"(?<![\w.])([+-]?inf|-?nan)(?![\w])", lambda m: hexfloat(m.group(1), et), value)
    if et.startswith("f") or et.startswith("bf") or et.startswith("complex"):
        # MLIR's float literals need a '.' or exponent: 1 -> 1.0 (not the
        # exponent of 1.6e+16, not hex bits).
        v = re.sub(r"(?<![\w.+\-])(-?\d+)(?![\w.])", r"\1.0", v)
    return "dense<%s> : %s" % (v, t)


def tolerance(value, t):
    et = element_type(t) or ""
    numbers = re.findall(r"-?\d+\.(\d+)(?:e[-+]?\d+)?", value)
    digits = [len(f) for f in numbers if f.strip("0")]
    # Values written with fewer digits are exact ones (2.5); the most digits
    # written say how closely the spec states the inexact ones.
    written = 10.0 ** -max(digits) if digits else 0.0
    # The spec often states f64 results to float32's precision
    # (1.57079637 for pi/2): never ask for more than about 1e-7 relative.
    written = max(written, 1.2e-7 * 4) if et in ("f64", "complex<f64>") else written
    magnitude = max([abs(float(x)) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", value)] + [1.0])
    return "%.3e" % max(written, 8 * EPS.get(et, 0.0) * magnitude, 1e-12)


def is_float(t):
    et = element_type(t) or ""
    return et.startswith("f") or et.startswith("bf") or et.startswith("complex")


def tuple_value(name, value, t):
    """Ops building a tuple constant: `([1.0, 2.0], (3))` of type
    tuple<tensor<2xf64>, tuple<tensor<i64>>>, leaves first."""
    lines = []
    def build(v, ty, path):
        v = v.strip()
        if ty.startswith("tuple<"):
            types = split_top(ty[len("tuple<"):-1])
            values = split_top(v[1:-1]) if v.startswith("(") else [v]
            parts = [build(x, y, "%s_%d" % (path, i)) for i, (x, y) in enumerate(zip(values, types))]
            lines.append("  %s = stablehlo.tuple %s : %s" % (path, ", ".join(parts), ty))
            return path
        lines.append("  %s = stablehlo.constant %s" % (path, dense(v, ty)))
        return path
    build(value, t, name)
    return lines


def program(op, line, pre, code, post):
    pre_vals, pre_order = value_entries(pre)
    post_vals, post_order = value_entries(post)
    sigs = signatures(code)
    types, defined = {}, {}
    for names, operands, ins, outs in sigs:
        for name, t in zip(operands, ins):
            types.setdefault(name, t)
        for name, t in zip(names, outs):
            defined[name] = t
    # Pretty element-wise ops name one type for all operands:
    # `stablehlo.add %arg1, %one : tensor<i64>` (in while's example).
    for m in re.finditer(r"(?:stablehlo|chlo)\.[a-z_]+ ((?:%\w+, )*%\w+) : (tensor<[^>]*>)\s*$",
                         "\n".join(code), re.M):
        for name in m.group(1).split(", "):
            types.setdefault(name, m.group(2))
    notes = []
    replicas = int(pre_vals.get("num_replicas", "1"))
    partitions = int(pre_vals.get("num_partitions", "1"))
    grid_notes = []
    if "num_replicas" not in pre_vals and "num_partitions" not in pre_vals:
        derived = derived_replicas(code)
        if derived > 1:
            replicas = derived
            grid_notes.append("the spec gives no process grid: %d replicas, the ids it "
                              "names" % derived)
    if replicas * partitions > 1:
        return parallel_program(op, line, pre_vals, post_vals, post_order, code, types, defined,
                                replicas, partitions, grid_notes)
    lines = []
    body_text = "\n".join(code)
    uses = sorted(set(re.findall(r"%[A-Za-z_][\w]*", body_text)), key=body_text.find)
    made = set()
    for name in uses:
        if name in made or name in defined or re.match(r"%arg\d+$", name) and name not in types:
            continue
        if re.search(r"\^bb\d+\([^)]*" + re.escape(name) + r"\s*:", body_text):
            continue  # a block argument
        if re.search(r"(?m)^\s*" + re.escape(name) + r"(?::\d+)?\s*(?:,[^=]*)?=", body_text):
            continue  # defined by the example itself
        t = types.get(name)
        if t is None:
            return None, "cannot tell the type of input %s" % name
        # (`// operand: ...` without the '%' once, in sign's example)
        value = pre_vals.get(name, pre_vals.get(name + "@(0,0)", pre_vals.get(name[1:])))
        made.add(name)
        if t.startswith("tuple<") and value is not None:
            lines += tuple_value(name, value, t)
        elif t.startswith("!stablehlo.token"):
            lines.append("  %s = stablehlo.create_token : !stablehlo.token" % name)
        elif value is None:
            lines.append("  %s = stablehlo.constant dense<%s> : %s" %
                         (name, "0.0" if is_float(t) else ("false" if element_type(t) == "i1" else "0"), t))
            if "input values" not in " ".join(notes):
                notes.append("the spec gives no input values: zeros")
        else:
            lines.append("  %s = stablehlo.constant %s" % (name, dense(value, t)))
    lines += ["  " + l for l in code]
    checks = 0
    for key in post_order:
        name = key.split("@")[0]
        if "@" in key and key.split("@")[1] != "(0,0)":
            continue
        t = defined.get(name)
        if t is None and re.match(r"^(%\w*?)(\d+)$", name):  # %result0 for %result#0
            m = re.match(r"^(%\w*?)(\d+)$", name)
            t = defined.get("%s#%s" % (m.group(1), m.group(2)))
            name = "%s#%s" % (m.group(1), m.group(2)) if t else name
        if t is None or t.startswith("!"):
            continue
        value = post_vals[key]
        if is_float(t):
            lines.append("  check.expect_almost_eq_const %s, %s {tolerance = %s : f64}" %
                         (name, dense(value, t), tolerance(value, t)))
        else:
            lines.append("  check.expect_eq_const %s, %s" % (name, dense(value, t)))
        checks += 1
    if checks == 0:
        notes.append("the spec gives no result values: runs without checks")
    head = ["// Generated by tests/spec_examples/generate.py from the example of `%s`" % op,
            "// at spec.md line %d; do not edit (re-run the script)." % line]
    head += ["// Note: %s." % n for n in notes]
    text = "\n".join(head) + "\nfunc.func @main() {\n" + "\n".join(lines) + "\n  return\n}\n"
    return text, None


def derived_replicas(code):
    """The replicas an example without a grid needs, from the process ids it
    names (the largest plus one; 1 when it names none): replica_groups in
    cross_replica mode (no channel_handle: the ids are replica ids, spec.md
    "Collective ops"), or source_target_pairs (replica ids on a grid of one
    partition, for collective_permute, send and recv alike)."""
    text = "\n".join(code)
    m = re.search(r"replica_groups = dense<(\[[\d\[\], ]*\])>", text)
    if m and "channel_handle" in text:
        m = None
    m = m or re.search(r"source_target_pairs = dense<(\[[\d\[\], ]*\])>", text)
    if not m:
        return 1
    return max(int(x) for x in re.findall(r"\d+", m.group(1))) + 1


def parallel_program(op, line, pre_vals, post_vals, post_order, code, types, defined,
                     replicas, partitions, grid_notes=()):
    """An example the spec runs on several processes: the example becomes
    @process, run on every process of the grid by the reference
    interpreter's `interpreter.run_parallel`, with each process's inputs
    (`// %x@(r, p): ...`) and checks of each process's results."""
    body_text = "\n".join(code)
    uses = sorted(set(re.findall(r"%[A-Za-z_][\w]*", body_text)), key=body_text.find)
    inputs = []
    for name in uses:
        if name in defined or re.search(r"\^bb\d+\([^)]*" + re.escape(name) + r"\s*:", body_text):
            continue
        if re.search(r"(?m)^\s*" + re.escape(name) + r"(?::\d+)?\s*(?:,[^=]*)?=", body_text):
            continue
        t = types.get(name)
        if t is None:
            return None, "cannot tell the type of input %s" % name
        inputs.append((name, t))
    # What @process returns: the example's tensor results, in order.
    outputs = [(n, t) for n, t in defined.items() if not t.startswith("!") and
               re.search(r"(?m)^(?:%\w+(?::\d+)?\s*,\s*)*" + re.escape(n.split("#")[0]) + r"(?::\d+)?\s*(?:,[^=]*)?=",
                         body_text)]
    notes = ["runs on %d x %d processes (interpreter.run_parallel)" % (replicas, partitions)]
    notes += grid_notes
    lines = ["func.func @process(%s) -> (%s) {" % (
        ", ".join("%s: %s" % (n, t) for n, t in inputs), ", ".join(t for _, t in outputs))]
    lines += ["  " + l for l in code]
    if outputs:
        lines.append("  return %s : %s" % (", ".join(n for n, _ in outputs),
                                           ", ".join(t for _, t in outputs)))
    else:
        lines.append("  return")
    lines.append("}")
    lines.append("func.func @main() {")
    args, arg_types, zeros = [], [], False
    for r in range(replicas):
        for p in range(partitions):
            for name, t in inputs:
                value = pre_vals.get("%s@(%d,%d)" % (name, r, p), pre_vals.get(name))
                arg = "%s_%d_%d" % (name, r, p)
                if t.startswith("!stablehlo.token"):
                    lines.append("  %s = stablehlo.create_token : !stablehlo.token" % arg)
                elif value is None:
                    zeros = True
                    lines.append("  %s = stablehlo.constant dense<%s> : %s" %
                                 (arg, "0.0" if is_float(t) else "0", t))
                else:
                    lines.append("  %s = stablehlo.constant %s" % (arg, dense(value, t)))
                args.append(arg)
                arg_types.append(t)
    if zeros:
        notes.append("the spec gives no values for some inputs: zeros")
    n = replicas * partitions * len(outputs)
    programs = "[%s]" % ", ".join("[%s]" % ", ".join(["@process"] * partitions) for _ in range(replicas))
    lines.append('  %s"interpreter.run_parallel"(%s) {programs = %s} : (%s) -> (%s)' % (
        "%%results:%d = " % n if n else "", ", ".join(args), programs, ", ".join(arg_types),
        ", ".join(t for _ in range(replicas * partitions) for _, t in outputs)))
    checks = 0
    names = [o for o, _ in outputs]
    for key in post_order:
        name, _, where = key.partition("@")
        m = re.match(r"^\((\d+),(\d+)\)$", where) if where else None
        r, p = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        if name not in names and re.match(r"^(%\w*?)(\d+)$", name):  # %result0 for %result#0
            m2 = re.match(r"^(%\w*?)(\d+)$", name)
            name = "%s#%s" % (m2.group(1), m2.group(2))
        if name not in names:
            continue
        t = defined[name]
        index = (r * partitions + p) * len(outputs) + names.index(name)
        value = post_vals[key]
        if is_float(t):
            lines.append("  check.expect_almost_eq_const %%results#%d, %s {tolerance = %s : f64}" %
                         (index, dense(value, t), tolerance(value, t)))
        else:
            lines.append("  check.expect_eq_const %%results#%d, %s" % (index, dense(value, t)))
        checks += 1
    if checks == 0:
        notes.append("the spec gives no result values: runs without checks")
    lines.append("  return")
    lines.append("}")
    head = ["// Generated by tests/spec_examples/generate.py from the example of `%s`" % op,
            "// at spec.md line %d; do not edit (re-run the script)." % line]
    head += ["// Note: %s." % n for n in notes]
    return "\n".join(head) + "\n" + "\n".join(lines) + "\n", None


def main():
    spec = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        HERE, "..", "..", "..", "shared", "reference", "stablehlo", "spec.md")
    with open(spec) as f:
        blocks = examples(f.read())
    for name in os.listdir(HERE):
        if name.endswith(".mlir"):
            os.remove(os.path.join(HERE, name))
    skipped = []
    count = {}
    total = 0
    for op, line, block in blocks:
        for piece in split_examples(block):
            pre, code, post = split_comments(piece)
            if not code:
                continue
            total += 1
            count[op] = count.get(op, 0) + 1
            base = "%s_%d" % (op, count[op])
            text, why = program(op, line, pre, code, post)
            if text is None:
                skipped.append("%s (spec.md line %d): %s" % (base, line, why))
                continue
            with open(os.path.join(HERE, base + ".mlir"), "w") as f:
                f.write(text)
    with open(os.path.join(HERE, "SKIPPED.txt"), "w") as f:
        f.write("# Examples of spec.md generate.py made no program of, and why.\n")
        for s in skipped:
            f.write(s + "\n")
    print("%d blocks, %d examples, %d programs, %d skipped" %
          (len(blocks), total, total - len(skipped), len(skipped)))


if __name__ == "__main__":
    main()
