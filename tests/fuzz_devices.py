"""Fuzzer generators of issue 27 (item 11) for devices and numerics, registered in
`tests.fuzzing.EXTRA_GENERATORS`:

* ``te-vs-device``: one te op (sums, ``max=``/``min=`` reductions, matmuls, elementwise
  ops, integer division) over inputs full of +-inf, NaN, -0.0 and subnormals (integers:
  0, -1, the type's extremes), run at te level and compiled for a chip (``tiny4``,
  ``tiny16``, ``mtia-v1``) and run there; the two results must agree as the README's
  "Numerics" states (bitwise where nothing is summed; sums to the summation-order bound,
  with the same non-finite values), else the case is a ``te/device mismatch``;
* ``device-files``: a bundled file of every family (``tiny16-hbm-mesh``, ``mtia-v1``,
  ``npu-server``: every field of their schemas present) with one field given a value of
  the wrong type or out of range (`bad_values`, by the field's kind in the family's
  schema), a required field deleted or an unknown one added, given to ``irc-plan`` and
  to ``irc-opt`` with the family's pipeline; it must be refused with a diagnostic
  (``Case.must_fail``: exit 0 is a ``wrong success``).

The helpers that edit device files (`set_field`, `delete_field`) and draw bad values
serve ``tests/devices/test_schema.py`` too.
"""

from __future__ import annotations

import io
import random
from collections.abc import Iterator

import numpy as np

from irc.devices import DEVICE_DIR
from irc.devices import device as ipu_family
from irc.devices import mtia as mtia_family
from irc.devices import npu as npu_family
from irc.devices.schema import CHOICE, CHOICES, INTEGER, INTEGERS, NAME, NUMBER, STRING, Field
from tests.fuzzing import Case

FAMILY_FILES = {"ipu": "tiny16_hbm_mesh.toml", "mtia": "mtia_v1.toml", "npu": "npu_server.toml"}
"""A bundled file of each family that states every field of its schema."""
SCHEMAS = {"ipu": ipu_family.SCHEMA, "mtia": mtia_family.SCHEMA, "npu": npu_family.SCHEMA}


# ---------------------------------------------------------------------------
# Device files
# ---------------------------------------------------------------------------


def bad_values(field: Field) -> list[str]:
    """TOML values ``field`` refuses: of other types, and of its type out of its range."""
    wrong_types = ['"7"', "1.5", "true", "[1, 2]", "{ a = 1 }", "1979-05-27"]
    if field.kind == INTEGER:
        out = [v for v in wrong_types if v != "1.5"] + ["2.0", "nan"]
        if field.minimum is not None:
            out.append(str(int(field.minimum) - 1))
        if field.maximum is not None:
            out.append(str(int(field.maximum) + 1))
        return out
    if field.kind == NUMBER:
        out = [v for v in wrong_types if v != "1.5"] + ["nan", "inf", "-inf", "-1.0", "1e300"]
        return out + (["0", "1e-300"] if field.minimum else [])
    if field.kind in (STRING, NAME):
        out = ["1", "1.5", "true", '["a"]', "{ a = 1 }", '"' + "a" * 5000 + '"']
        out += ['""'] if field.required else []
        return out + (['"a b"', '"../x"', '"' + "a" * 200 + '"'] if field.kind == NAME else [])
    if field.kind == CHOICE:
        return ['"bogus"', "1", "true", f'["{field.choices[0]}"]', "{ a = 1 }", '""']
    low, high = field.length
    if field.kind == INTEGERS:
        ones = [1] * low
        out = ["1", '"1, 2"', "[]" if low else "[[]]", "{ a = 1 }", str([1] * (high + 1)), str([0] + ones[1:]),
               str(["a"] * low).replace("'", '"'), str([1.5] * low), "[true" + ", true" * (low - 1) + "]"]
        if field.maximum is not None:
            out.append(str([int(field.maximum) + 1] + ones[1:]))
        if low > 1:
            out.append(str(ones[1:]))
        return out
    assert field.kind == CHOICES
    return [f'"{field.choices[0]}"', "[]", '["bogus"]', f'["{field.choices[0]}", "{field.choices[0]}"]', "[1]",
            "{ a = 1 }"]


def _table_and_key(dotted: str) -> tuple[str, str]:
    table, _, key = dotted.rpartition(".")
    return table, key


def _place(lines: list[str], dotted: str) -> tuple[int | None, int]:
    """(index of ``dotted``'s line or None, index to insert it at: after its table's
    last line, or at the end of the top level)."""
    table, key = _table_and_key(dotted)
    current, insert, found = "", None, None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("["):
            if current == table and insert is None:
                insert = i
            current = stripped.strip("[]").strip()
            continue
        name = stripped.split("=", 1)[0].strip()
        if current == table and name == key and "=" in stripped and not stripped.startswith("#"):
            found = i
    if insert is None:
        insert = len(lines) if table else next((i for i, line in enumerate(lines) if line.strip().startswith("[")),
                                               len(lines))
    return found, insert


def set_field(text: str, dotted: str, literal: str) -> tuple[str, int]:
    """``text`` with field ``dotted`` set to the TOML ``literal`` (its line replaced, or
    a line added in its table, the table added when missing); and the field's line."""
    lines = text.splitlines()
    found, insert = _place(lines, dotted)
    table, key = _table_and_key(dotted)
    if found is not None:
        lines[found] = f"{key} = {literal}"
        return "\n".join(lines) + "\n", found + 1
    if table and not any(line.strip() == f"[{table}]" for line in lines):
        lines += [f"[{table}]", f"{key} = {literal}"]
        return "\n".join(lines) + "\n", len(lines)
    lines.insert(insert, f"{key} = {literal}")
    return "\n".join(lines) + "\n", insert + 1


def delete_field(text: str, dotted: str) -> str:
    lines = text.splitlines()
    found, _ = _place(lines, dotted)
    assert found is not None, dotted
    del lines[found]
    return "\n".join(lines) + "\n"


def family_text(family: str) -> str:
    return (DEVICE_DIR / FAMILY_FILES[family]).read_text()


def malformed_device(rng: random.Random, family: str) -> tuple[str, str, str]:
    """(file text, the field at fault, label): one field of ``family``'s file made invalid."""
    schema = SCHEMAS[family]
    text = family_text(family)
    roll = rng.random()
    if roll < 0.8:
        field = rng.choice(schema.fields)
        value = rng.choice(bad_values(field))
        if field.key == "family":
            value = rng.choice(['[1, 2]', "{}", '"gpu"', "3", '""'])
        return set_field(text, field.key, value)[0], field.key, f"{family}-{field.kind}"
    if roll < 0.9:
        field = rng.choice([f for f in schema.fields if f.required and f.key != "family"])
        return delete_field(text, field.key), field.key, f"{family}-missing"
    table = rng.choice(sorted(schema.tables))
    dotted = f"{table}.bogus" if table else "bogus"
    return set_field(text, dotted, "1")[0], dotted, f"{family}-unknown"


MODEL = """func.func @main(%x: tensor<16x8xf32> {irc.name = "x"}, %w1: tensor<8x8xf32> {irc.name = "w1", irc.weight},
                %w2: tensor<8x4xf32> {irc.name = "w2", irc.weight}) -> (tensor<f32> {irc.name = "loss"}) {
  %h = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %y = te.op "Y[m,n] += X[m,k] * W[k,n]" (%h, %w2) : (tensor<16x8xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  %l = te.op "L[] += Y[m,n] * Y[m,n] * 0.5" (%y) : (tensor<16x4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
"""

PIPELINES = {"ipu": 'inference{device="dev.toml"}', "mtia": 'mtia-partition{device="dev.toml"},te-to-mtia',
             "npu": 'training{device="dev.toml"}'}


def device_file_cases(rng: random.Random, count: int, seed: int) -> Iterator[Case]:
    """``count`` malformed device files of every family, each given to one tool."""
    for _ in range(count):
        family = rng.choice(sorted(SCHEMAS))
        text, field, label = malformed_device(rng, family)
        files = {"dev.toml": text.encode(), "model.mlir": MODEL.encode()}
        cost = ["--cost", "mtia"] if family == "mtia" else []
        roll = rng.random()
        if roll < 0.35:
            argv = ["--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=8,k=8,n=8", "--device", "dev.toml", *cost]
            yield Case("irc-plan", argv, files, "device-" + label, must_fail=True, group="device-files")
        elif roll < 0.55:
            yield Case("irc-plan", ["--model", "model.mlir", "--device", "dev.toml", *cost], files, "device-" + label,
                       must_fail=True, group="device-files")
        else:
            yield Case("irc-opt", ["model.mlir", "-p", PIPELINES[family], "-o", "out.mlir"], files,
                       "device-" + label, [("irc-run", ["out.mlir"])], must_fail=True, group="device-files")


# ---------------------------------------------------------------------------
# Non-finite inputs, te vs device
# ---------------------------------------------------------------------------

FLOAT_OPS = (
    ("Y[i] += X[i,j]", ((4, 9),), (4,), True),
    ("Y[i] max= X[i,j]", ((4, 9),), (4,), False),
    ("Y[i] min= X[i,j]", ((4, 9),), (4,), False),
    ("Y[j] max= X[i,j]", ((9, 4),), (4,), False),
    ("Y[i,k] min= X[i,j,k]", ((3, 5, 4),), (3, 4), False),
    ("C[m,n] += A[m,k] * B[k,n]", ((4, 6), (6, 5)), (4, 5), True),
    ("C[i,j] = max(A[i,j], B[i,j]) * A[i,j]", ((4, 6), (4, 6)), (4, 6), False),
    ("C[i,j] = A[i,j] / B[i,j] - A[i,j]", ((4, 6), (4, 6)), (4, 6), False),
)
"""(expression, input shapes at most, output shape, whether it sums): shapes are drawn
at or below these, each dimension scaled alike where tensors share an axis."""

INT_OPS = (
    ("Q[i,j] = A[i,j] / B[i,j]", ((4, 6), (4, 6)), (4, 6)),
    ("Y[i] max= X[i,j] * X[i,j]", ((4, 9),), (4,)),
    ("Y[i] += X[i,j]", ((4, 9),), (4,)),
    ("C[i,j] = cast(F[i,j])", ((4, 6),), (4, 6)),
)
"""Integer ops (the last converts floats to the integer type)."""

TARGETS = (("inference{device=tiny4}", 3), ("inference{device=tiny16}", 3),
           ("mtia-partition{device=mtia-v1},te-to-mtia", 1))


def special_floats(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Mostly +-inf, NaN, +-0.0 and subnormals, the rest moderate normal numbers (whose
    sums cannot overflow, so the order of a sum changes no non-finite result)."""
    tiny = float(np.finfo(dtype).smallest_subnormal)
    specials = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, tiny, -tiny, 7 * tiny, 1.0, -1.0])
    share = rng.choice([0.05, 0.3, 0.7])
    values = np.where(rng.random(shape) < share, rng.choice(specials, shape), rng.uniform(-10, 10, shape))
    if shape and rng.random() < 0.6:   # whole slices of one special value, or of zeros of both signs
        axis = int(rng.integers(len(shape)))
        picked = rng.random(shape[axis]) < 0.5
        view = np.moveaxis(values, axis, 0)   # a view: writing it writes values
        fill = rng.choice([np.inf, -np.inf, np.nan, -0.0, 0.0, tiny, -tiny, 2.0],
                          p=[0.25, 0.25, 0.1, 0.05, 0.05, 0.05, 0.05, 0.2])
        view[picked] = rng.choice([-0.0, 0.0], view[picked].shape) if fill == 2.0 else fill
    return values.astype(dtype)


def special_ints(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    specials = np.array([0, 0, -1, 1, info.min, info.max, info.min + 1], dtype=np.int64)
    values = np.where(rng.random(shape) < 0.4, rng.choice(specials, shape), rng.integers(-100, 100, shape))
    return values.astype(dtype)


def _shrunk(rng: random.Random, shapes, out):
    """Input and output shapes with each distinct extent scaled down alike."""
    extents = sorted({d for shape in (*shapes, out) for d in shape})
    new = {e: rng.randint(1, e) for e in extents}
    return [tuple(new[d] for d in shape) for shape in shapes], tuple(new[d] for d in out)


def _type(dtype) -> str:
    return {"float32": "f32", "float16": "f16", "int32": "i32", "int64": "i64", "int8": "i8"}[np.dtype(dtype).name]


def _program(expr: str, shapes, out, dtypes, out_dtype) -> str:
    names = [f"in{i}" for i in range(len(shapes))]
    types = [f"tensor<{'x'.join(map(str, s))}x{_type(d)}>" for s, d in zip(shapes, dtypes)]
    result = f"tensor<{'x'.join(map(str, out))}x{_type(out_dtype)}>"
    args = ", ".join(f'%{n}: {t} {{irc.name = "{n}"}}' for n, t in zip(names, types))
    return (f'func.func @main({args}) -> ({result} {{irc.name = "y"}}) {{\n'
            f'  %y = te.op "{expr}" ({", ".join("%" + n for n in names)}) : ({", ".join(types)}) -> {result}\n'
            f"  func.return %y : {result}\n}}\n")


def _compare(expr: str, shapes, out, inputs: dict, sums: bool):
    """The check of a te-vs-device case: te.npz and dev.npz as the numerics contract says."""
    def check():
        from irc.dialects.te_expr import parse_expression
        from tests.plan_strategies import one_rounding_bound

        te, dev = np.load("te.npz")["y"], np.load("dev.npz")["y"]
        if te.dtype != dev.dtype or te.shape != dev.shape:
            return "te/device mismatch", f"{expr}: te gives {te.dtype}{te.shape}, the chip {dev.dtype}{dev.shape}"
        if te.dtype.kind != "f":
            same = np.array_equal(te, dev)
        else:
            same = np.array_equal(np.isnan(te), np.isnan(dev)) and np.array_equal(
                np.signbit(te) | np.isnan(te), np.signbit(dev) | np.isnan(dev))
            infinite = np.isinf(te) | np.isinf(dev)
            same = same and np.array_equal(te[infinite], dev[infinite])
            finite = np.isfinite(te) & np.isfinite(dev)
            if not sums:
                same = same and np.array_equal(te[finite], dev[finite])
            elif same and finite.any():
                bound = parse_expression(expr).bind(shapes, out)
                named = dict(zip(bound.expr.inputs, inputs.values()))
                with np.errstate(invalid="ignore", over="ignore"):
                    allowed = one_rounding_bound(bound, named, dev, te)
                error = np.abs(te.astype(np.float64) - dev.astype(np.float64))
                same = bool((error[finite] <= allowed[finite]).all())
        if same:
            return None
        where = np.argwhere(~((te == dev) | (np.isnan(te) & np.isnan(dev))) if te.dtype.kind == "f" else te != dev)
        at = tuple(int(i) for i in where[0]) if len(where) else ()
        shown = (te[at].item(), dev[at].item()) if at else (te.tolist(), dev.tolist())
        return "te/device mismatch", f"{expr}: at {at} te gives {shown[0]!r}, the chip {shown[1]!r}"
    return check


def nonfinite_cases(rng: random.Random, count: int, seed: int) -> Iterator[Case]:
    """``count`` te ops over special values, run at te level and on a chip, compared."""
    values = np.random.default_rng(seed)
    for _ in range(count):
        if rng.random() < 0.75:
            expr, shapes, out, sums = rng.choice(FLOAT_OPS)
            dtype = rng.choice([np.float32, np.float32, np.float16])
            shapes, out = _shrunk(rng, shapes, out)
            dtypes, out_dtype = [dtype] * len(shapes), dtype
            arrays = [special_floats(values, s, dtype) for s in shapes]
        else:
            expr, shapes, out = rng.choice(INT_OPS)
            sums = False
            dtype = rng.choice([np.int32, np.int32, np.int8, np.int64])
            shapes, out = _shrunk(rng, shapes, out)
            floats = expr.startswith("C[i,j] = cast")
            dtypes, out_dtype = [np.float32 if floats else dtype] * len(shapes), dtype
            arrays = [special_floats(values, s, np.float32) * (1e10 if floats else 1) if floats
                      else special_ints(values, s, dtype) for s in shapes]
        inputs = {f"in{i}": a for i, a in enumerate(arrays)}
        buffer = io.BytesIO()
        np.savez(buffer, **inputs)
        pipeline = rng.choices([t for t, _ in TARGETS], [w for _, w in TARGETS])[0]
        files = {"prog.mlir": _program(expr, shapes, out, dtypes, out_dtype).encode(), "in.npz": buffer.getvalue()}
        then = [("irc-opt", ["prog.mlir", "-p", pipeline, "-o", "dev.mlir"]),
                ("irc-run", ["dev.mlir", "--inputs", "in.npz", "--output", "dev.npz", "--allow-lossy"])]
        yield Case("irc-run", ["prog.mlir", "--inputs", "in.npz", "--output", "te.npz", "--allow-lossy"], files,
                   f"nonfinite-{_type(out_dtype)}-{pipeline.split('{')[0]}", then,
                   check=_compare(expr, shapes, out, inputs, sums), group="te-vs-device")


__all__ = ["FAMILY_FILES", "SCHEMAS", "bad_values", "delete_field", "device_file_cases", "family_text",
           "malformed_device", "nonfinite_cases", "set_field"]
