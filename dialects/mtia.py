"""The `mtia` dialect: one operator's program on an MTIA PE sub-grid (seeds/001 s3-4).

SPMD over the PEs of a ``rows x cols`` sub-grid: every op acts on all of them, and what
differs between PEs (where a PE's slice of a tensor starts) is an
``affine_map<(d0, d1) -> (...)>`` of the PE's row ``d0`` and column ``d1``. The ops are
section 4's Figure 8 program, one op per loop of it:

    %a = mtia.cb_init {name = "A", id = 0 : i64, depth = 32768 : i64, grid = array<i64: 4, 4>}
           : !mtia.cb<128x512xi8>
    mtia.dma %A into %a {origin = affine_map<(d0, d1) -> (d0 * 128, (d1 mod 2) * 512)>,
           block = array<i64: 64, 32>, multicast = "row", level = "sram"}
           : tensor<512x1024xi8>, !mtia.cb<128x512xi8>
    %acc = mtia.mml %a, %b {b_transposed = false} : !mtia.cb<128x512xi8>, !mtia.cb<512x128xi8>
           -> !mtia.acc<128x128xi32>
    %sum = mtia.reduce %acc {direction = "west-east", chain = 2 : i64} : !mtia.acc<128x128xi32>
    %c = mtia.store %sum {origin = ..., level = "sram"} : !mtia.acc<128x128xi32> -> tensor<512x256xi32>

An embedding bag (section 6's TBE) is a gather and a pooling: each PE DMAs the table
rows of its samples' bags (addresses read from the indices at run time) into a circular
buffer, and its SIMD engine adds them into one pooled row per bag:

    %rows = mtia.cb_init {name = "emb0", id = 0 : i64, depth = 832 : i64, grid = array<i64: 1, 8>}
           : !mtia.cb<26x32xf32>
    mtia.gather %table, %idx, %off into %rows {first = affine_map<(d0, d1) -> ((d0 * 8 + d1))>,
           samples = 1 : i64, tables = array<i64: 50>, batch = 8 : i64, level = "sram"}
           : tensor<50x32xf32>, tensor<32xi64>, tensor<8xi64>, !mtia.cb<26x32xf32>
    %bags = mtia.pool %rows {mode = "sum"} : !mtia.cb<26x32xf32> -> !mtia.acc<1x32xf32>

and any other operator whose tensor expression the planner describes runs data-parallel
on the PEs' SIMD engines (``mtia.simd``: elementwise, quantize, concatenation, small
batched products).

A circular buffer (``!mtia.cb``) holds one PE's slice of a tensor in its local memory;
when its ``depth`` is smaller than the slice the DMA streams it through the buffer (and
a slice the MML needs again is read again). Accumulators (``!mtia.acc``) are the RE's
banks: INT32 for integer operands, FP32 for floating-point ones (section 3.1.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from irc.dialects.device import (
    CORE_TABLE,
    MAX_CORES,
    group_leaders,
    groups_from_keys,
    table_attr,
)
from irc.dialects.dtypes import element_bytes  # noqa: F401 (re-exported to the chip's users)
from irc.dialects.mtia_plans import PLAN_ATTRIBUTES
from irc.dialects.mtia_types import (  # noqa: F401 (the types and the ops' shared checks, re-exported)
    DIRECTIONS, LEVELS, MULTICAST, AccumulatorType, CircularBufferType, TileType, _array, _i64, _int,
    _integer_vector, _origin, _pes_table, _tile, _values, _verify_kind_roles, accumulator_element, simd_traffic,
)
from irc.dialects.te import ExprAttr, verify_element_types
from irc.dialects.te_expr import ExprError, IndirectIndex

@irdl_op_definition
class CircularBufferInitOp(IRDLOperation):
    """Set up circular buffer ``id`` named ``name`` with ``depth`` bytes in the local
    memory of every PE of a ``grid`` = [rows, cols] sub-grid (section 3.3: a CB is a pair
    of registers, its start and depth, with read and write pointers); the result stands
    for each PE's slice of one tensor. Operations that read or write the buffer are
    ordered by its id, and an operation waits until its data (or space) is there."""

    name = "mtia.cb_init"

    buffer_name = prop_def(StringAttr, prop_name="name")
    id = prop_def(IntegerAttr[I64])
    depth = prop_def(IntegerAttr[I64])
    grid = prop_def(DenseArrayBase)
    buffer = result_def(CircularBufferType)

    assembly_format = "attr-dict `:` type($buffer)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, name: str, buffer_id: int, depth: int, grid: Sequence[int], buffer_type: CircularBufferType):
        super().__init__(result_types=[buffer_type], properties={
            "name": StringAttr(name), "id": _i64(buffer_id), "depth": _i64(depth), "grid": _array(grid)})

    @property
    def grid_shape(self) -> tuple[int, int]:
        rows, cols = _values(self.grid)
        return rows, cols

    def verify_(self) -> None:
        grid = _values(self.grid)
        if len(grid) != 2 or min(grid) < 1:
            raise VerifyException(f"grid must be [rows, cols] of positive integers, got {list(grid)}")
        if _int(self.id) < 0:
            raise VerifyException(f"circular buffer id must be non-negative, got {_int(self.id)}")
        if _int(self.depth) < 1:
            raise VerifyException(f"circular buffer {self.buffer_name.data} has depth {_int(self.depth)} bytes")


def defining_grid(value: SSAValue) -> tuple[int, int] | None:
    """The sub-grid of the circular buffer a value comes from (through mml/reduce/pool)."""
    owner = value.owner
    if isinstance(owner, CircularBufferInitOp):
        return owner.grid_shape
    if isinstance(owner, (MatMulOp, ReduceOp, PoolOp)):
        return defining_grid(owner.operands[0])
    return None


@irdl_op_definition
class DmaOp(IRDLOperation):
    """Stream each PE's slice of ``source`` (a tensor living in ``level``, the on-chip
    SRAM or LPDDR) into its circular buffer, ``block`` elements per DMA operation (Figure
    8's producer): PE (d0, d1) reads the slice starting at ``origin(d0, d1)`` with the
    buffer's shape; elements outside the tensor read as zero (padding). ``multicast``:
    the PEs of one row (or one column) whose slices start at the same place share one
    read, served once by the memory (section 3.4). ``passes``: how often the slice is
    read (more than once when the buffer cannot keep it while the MML reuses it)."""

    name = "mtia.dma"

    source = operand_def(TensorType)
    buffer = operand_def(CircularBufferType)
    origin = prop_def(AffineMapAttr)
    block = prop_def(DenseArrayBase)
    multicast = prop_def(StringAttr)
    level = prop_def(StringAttr)
    passes = opt_prop_def(IntegerAttr[I64])

    assembly_format = "$source `into` $buffer attr-dict `:` type($source) `,` type($buffer)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, source: SSAValue, buffer: SSAValue, origin, block: Sequence[int], multicast: str,
                 level: str, passes: int = 1):
        properties = {"origin": AffineMapAttr(origin), "block": _array(block), "multicast": StringAttr(multicast),
                      "level": StringAttr(level)}
        if passes != 1:
            properties["passes"] = _i64(passes)
        super().__init__(operands=[source, buffer], properties=properties)

    @property
    def read_passes(self) -> int:
        return 1 if self.passes is None else _int(self.passes)

    def verify_(self) -> None:
        slice_type = self.buffer.type
        rank = len(self.source.type.get_shape())
        if rank != 2:
            raise VerifyException(f"a DMA streams a rank-2 tensor, got rank {rank}")
        if self.source.type.get_element_type() != slice_type.element_type:
            raise VerifyException(f"element type mismatch: tensor of {self.source.type.get_element_type()} "
                                  f"into a circular buffer of {slice_type.element_type}")
        _origin(self.origin, rank, "origin")
        block = _values(self.block)
        if len(block) != 2 or min(block) < 1:
            raise VerifyException(f"block must be two positive extents, got {list(block)}")
        if any(s % b for s, b in zip(slice_type.get_shape(), block)):
            raise VerifyException(f"block {list(block)} does not tile the slice {list(slice_type.get_shape())}")
        if self.multicast.data not in MULTICAST:
            raise VerifyException(f"multicast must be one of {', '.join(MULTICAST)}, got '{self.multicast.data}'")
        if self.level.data not in LEVELS:
            raise VerifyException(f"level must be one of {', '.join(LEVELS)}, got '{self.level.data}'")
        if self.read_passes < 1:
            raise VerifyException(f"passes must be positive, got {self.read_passes}")


@irdl_op_definition
class MatMulOp(IRDLOperation):
    """Multiply every PE's slices, A (m x k) by B (k x n, or n x k when ``b_transposed``:
    section 4's Bᵀ), into its accumulators (Figure 8's consumer): per 64x64 output tile
    and 32-wide k step, four 32x32x32 MML operations into the four accumulator banks
    (2x2 blocking, every block used twice). An MML waits until the DMA has brought its
    blocks into the circular buffers (the hardware's stall, no software sync)."""

    name = "mtia.mml"

    lhs = operand_def(CircularBufferType)
    rhs = operand_def(CircularBufferType)
    b_transposed = prop_def(BoolAttr)
    result = result_def(AccumulatorType)

    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, lhs: SSAValue, rhs: SSAValue, b_transposed: bool, result_type: AccumulatorType):
        super().__init__(operands=[lhs, rhs], result_types=[result_type],
                         properties={"b_transposed": IntegerAttr.from_bool(b_transposed)})

    @property
    def transposed(self) -> bool:
        return bool(self.b_transposed.value.data)

    def extents(self) -> tuple[int, int, int]:
        """(m, k, n) of one PE's product."""
        m, k = self.lhs.type.get_shape()
        rhs = self.rhs.type.get_shape()
        n = rhs[0] if self.transposed else rhs[1]
        return m, k, n

    def verify_(self) -> None:
        m, k = self.lhs.type.get_shape()
        rhs = self.rhs.type.get_shape()
        rk = rhs[1] if self.transposed else rhs[0]
        if rk != k:
            raise VerifyException(f"the slices' k extents differ: A has {k}, B has {rk}")
        n = rhs[0] if self.transposed else rhs[1]
        if self.result.type.get_shape() != (m, n):
            raise VerifyException(f"accumulators must be {m}x{n}, got {'x'.join(map(str, self.result.type.get_shape()))}")
        if self.lhs.type.element_type != self.rhs.type.element_type:
            raise VerifyException("the two slices have different element types")
        wanted = accumulator_element(self.lhs.type.element_type)
        if self.result.type.element_type != wanted:
            raise VerifyException(f"products of {self.lhs.type.element_type} accumulate in {wanted}, "
                                  f"not {self.result.type.element_type}")
        if m % 64 or n % 64 or k % 32:
            raise VerifyException(f"a PE's product must be in 64x64 tiles and 32-wide k steps, got m={m} n={n} k={k}")


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Accumulate partial sums over the reduction network (section 3.4): along
    ``direction`` (west to east: consecutive columns; north to south: consecutive rows),
    chains of ``chain`` adjacent PEs each pass their accumulators to the next, which adds
    its own; the sums end at the last PE of every chain."""

    name = "mtia.reduce"

    T: ClassVar = VarConstraint("T", base(AccumulatorType))
    input = operand_def(T)
    direction = prop_def(StringAttr)
    chain = prop_def(IntegerAttr[I64])
    result = result_def(T)

    assembly_format = "$input attr-dict `:` type($input)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, value: SSAValue, direction: str, chain: int):
        super().__init__(operands=[value], result_types=[value.type],
                         properties={"direction": StringAttr(direction), "chain": _i64(chain)})

    def verify_(self) -> None:
        if self.direction.data not in DIRECTIONS:
            raise VerifyException(f"direction must be one of {', '.join(DIRECTIONS)}, got '{self.direction.data}'")
        chain = _int(self.chain)
        if chain < 2:
            raise VerifyException(f"a reduction chain needs at least 2 PEs, got {chain}")
        grid = defining_grid(self.input)
        if grid is not None:
            along = grid[1] if self.direction.data == "west-east" else grid[0]
            if along % chain:
                raise VerifyException(f"chains of {chain} PEs do not divide the {along} PEs along {self.direction.data}")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Write the accumulators into the result tensor in ``level`` (DMA PutAddr): the PEs
    holding final sums (the last PE of every reduction chain, or every PE when nothing
    was reduced) write their block at ``origin(d0, d1)``, converted to the result's
    element type; parts outside the tensor (padding) are dropped."""

    name = "mtia.store"

    input = operand_def(AccumulatorType)
    origin = prop_def(AffineMapAttr)
    level = prop_def(StringAttr)
    result = result_def(TensorType)

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, value: SSAValue, origin, level: str, result_type: Attribute):
        super().__init__(operands=[value], result_types=[result_type],
                         properties={"origin": AffineMapAttr(origin), "level": StringAttr(level)})

    def verify_(self) -> None:
        _origin(self.origin, len(self.result.type.get_shape()), "origin")
        if self.level.data not in LEVELS:
            raise VerifyException(f"level must be one of {', '.join(LEVELS)}, got '{self.level.data}'")


@irdl_op_definition
class GatherOp(IRDLOperation):
    """Gather the table rows of each PE's embedding bags into its circular buffer (the
    DMA of section 6's TBE): PE (d0, d1) takes the ``samples`` consecutive samples from
    ``first(d0, d1)`` (of ``batch``) and, sample by sample, the bag of each of the
    ``tables`` tables stacked in ``table`` (``tables`` lists their rows); bag ``b = t *
    batch + s`` holds the rows ``indices[offsets[b]:offsets[b+1]]`` of table ``t``
    (``offsets`` has one start per bag, the last bag running to the end of ``indices``,
    or one more). Each row is
    one DMA read from ``level`` whose address the PE reads from its indices (loaded from
    SRAM first): the access pattern is known only at run time (section 7). A row waits
    for space in the buffer, which the pooling frees row by row."""

    name = "mtia.gather"

    table = operand_def(TensorType)
    indices = operand_def(TensorType)
    offsets = operand_def(TensorType)
    buffer = operand_def(CircularBufferType)
    first = prop_def(AffineMapAttr)
    samples = prop_def(IntegerAttr[I64])
    tables = prop_def(DenseArrayBase)
    batch = prop_def(IntegerAttr[I64])
    level = prop_def(StringAttr)

    assembly_format = ("$table `,` $indices `,` $offsets `into` $buffer attr-dict `:` type($table) `,` "
                       "type($indices) `,` type($offsets) `,` type($buffer)")
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, table: SSAValue, indices: SSAValue, offsets: SSAValue, buffer: SSAValue, first,
                 samples: int, tables: Sequence[int], level: str, batch: int):
        super().__init__(operands=[table, indices, offsets, buffer], properties={
            "first": AffineMapAttr(first), "samples": _i64(samples), "tables": _array(tables),
            "batch": _i64(batch), "level": StringAttr(level)})

    @property
    def table_rows(self) -> tuple[int, ...]:
        return _values(self.tables)

    @property
    def samples_per_pe(self) -> int:
        return _int(self.samples)

    @property
    def batch_size(self) -> int:
        return _int(self.batch)

    def verify_(self) -> None:
        shape = self.table.type.get_shape()
        if len(shape) != 2:
            raise VerifyException(f"the table must be rank 2 (rows x dim), got {self.table.type}")
        _integer_vector(self.indices, "indices")
        _integer_vector(self.offsets, "offsets")
        rows = self.table_rows
        if not rows or min(rows) < 1:
            raise VerifyException(f"tables must list each table's rows, got {list(rows)}")
        if sum(rows) != shape[0]:
            raise VerifyException(f"the tables' rows add up to {sum(rows)}, but the table has {shape[0]}")
        buffer = self.buffer.type
        if buffer.get_shape()[1] != shape[1]:
            raise VerifyException(f"the buffer's rows have {buffer.get_shape()[1]} elements, the table's {shape[1]}")
        if buffer.element_type != self.table.type.get_element_type():
            raise VerifyException(f"element type mismatch: table of {self.table.type.get_element_type()} "
                                  f"into a circular buffer of {buffer.element_type}")
        affine = self.first.data
        if affine.num_dims != 2 or affine.num_symbols != 0 or len(affine.results) != 1:
            raise VerifyException(f"first must map the PE's (row, column) to one sample: (d0, d1) -> (s), "
                                  f"got {affine}")
        if self.samples_per_pe < 1 or self.batch_size < 1:
            raise VerifyException(f"samples and batch must be positive, got {self.samples_per_pe} and "
                                  f"{self.batch_size}")
        bags = len(rows) * self.batch_size
        count = self.offsets.type.get_shape()[0]
        if count not in (bags, bags + 1):
            raise VerifyException(f"{len(rows)} table(s) x batch {self.batch_size} = {bags} bags need {bags} or "
                                  f"{bags + 1} offsets, got {count}")
        if self.level.data not in LEVELS:
            raise VerifyException(f"level must be one of {', '.join(LEVELS)}, got '{self.level.data}'")


POOL_MODES = ("sum", "mean")


def gather_of(buffer: SSAValue) -> GatherOp | None:
    """The ``mtia.gather`` filling ``buffer``, if any."""
    return next((use.operation for use in buffer.uses if isinstance(use.operation, GatherOp)), None)


@irdl_op_definition
class PoolOp(IRDLOperation):
    """Pool the rows a ``mtia.gather`` brings into ``buffer``: every PE's SIMD engine adds
    each row into its bag's sum as it arrives (FP32 for floating-point tables, INT32 for
    integer ones) and frees its slot; ``mean`` divides by the bag's rows (an empty bag is
    zeros). The result holds each PE's samples (rows) by every table's pooled row
    (columns, table-major): ``samples x (tables * dim)``."""

    name = "mtia.pool"

    buffer = operand_def(CircularBufferType)
    mode = prop_def(StringAttr)
    result = result_def(AccumulatorType)

    assembly_format = "$buffer attr-dict `:` type($buffer) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, buffer: SSAValue, mode: str, result_type: AccumulatorType):
        super().__init__(operands=[buffer], result_types=[result_type], properties={"mode": StringAttr(mode)})

    def verify_(self) -> None:
        if self.mode.data not in POOL_MODES:
            raise VerifyException(f"mode must be one of {', '.join(POOL_MODES)}, got '{self.mode.data}'")
        buffer = self.buffer.type
        wanted = accumulator_element(buffer.element_type)
        if self.result.type.element_type != wanted:
            raise VerifyException(f"rows of {buffer.element_type} pool in {wanted}, not "
                                  f"{self.result.type.element_type}")
        gather = gather_of(self.buffer)
        if gather is None:
            return
        samples, width = self.result.type.get_shape()
        want = (gather.samples_per_pe, len(gather.table_rows) * buffer.get_shape()[1])
        if (samples, width) != want:
            raise VerifyException(f"a PE pools {want[0]} sample(s) of {len(gather.table_rows)} table(s) of "
                                  f"{buffer.get_shape()[1]} elements: the result must be {want[0]}x{want[1]}, "
                                  f"got {samples}x{width}")


@irdl_op_definition
class SimdOp(IRDLOperation):
    """An operator stated as a tensor expression (as ``te.op``), run data-parallel on the
    SIMD engines of ``pes`` PEs (section 3.1.4: quantization, nonlinear functions,
    elementwise arithmetic): each PE DMAs its share of the inputs from their levels
    (``homes``: the output's first, then each input's), evaluates the expression over its
    share of the output's elements and writes them back. Elementwise work needs no data
    from other PEs; a reduction axis (a small batched product) is summed where its output
    element is."""

    name = "mtia.simd"

    expression = prop_def(ExprAttr)
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    homes = prop_def(ArrayAttr)
    pes = prop_def(IntegerAttr[I64])

    assembly_format = "$expression ` ` `(` $inputs `)` attr-dict `:` functional-type($inputs, $output)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, expression, inputs: Sequence[SSAValue], result_type: Attribute, homes: Sequence[str],
                 pes: int):
        if not isinstance(expression, ExprAttr):
            expression = ExprAttr(expression)
        super().__init__(operands=[list(inputs)], result_types=[result_type], properties={
            "expression": expression, "homes": ArrayAttr([StringAttr(h) for h in homes]), "pes": _i64(pes)})

    def parsed(self):
        return self.expression.expr

    def bound(self):
        return self.parsed().bind([tuple(v.type.get_shape()) for v in self.inputs],  # type: ignore[union-attr]
                                  tuple(self.output.type.get_shape()))  # type: ignore[union-attr]

    @property
    def levels(self) -> tuple[str, ...]:
        return tuple(h.data for h in self.homes.data)  # type: ignore[union-attr]

    def verify_(self) -> None:
        try:
            self.bound()
        except ExprError as error:
            raise VerifyException(f"'{self.expression.text}': {error.message}") from None
        verify_element_types(self.parsed(), self.inputs, self.output)
        homes = self.homes.data
        if len(homes) != 1 + len(self.inputs) or not all(isinstance(h, StringAttr) for h in homes):
            raise VerifyException(f"homes must name the level of the output and of each of the "
                                  f"{len(self.inputs)} input(s): {1 + len(self.inputs)} strings")
        for home in self.levels:
            if home not in LEVELS:
                raise VerifyException(f"level must be one of {', '.join(LEVELS)}, got '{home}'")
        if _int(self.pes) < 1:
            raise VerifyException(f"pes must be positive, got {_int(self.pes)}")


# ---------------------------------------------------------------------------------------
# T10 rotation plans on the PE grid: SPMD over PEs 0..pes-1 (row-major on the grid); a
# per-PE value is an affine map of the PE's number, (d0) -> (...), or a dense table
# ---------------------------------------------------------------------------------------


def _tile_pes(value: SSAValue) -> int | None:
    owner = value.owner
    return _int(owner.pes) if isinstance(owner, TileOp) else None


@irdl_op_definition
class TileOp(IRDLOperation):
    """A partition buffer at byte ``offset`` of the local memory of PEs ``0..pes-1``
    (row-major on the grid), the same shape on each; ``fill``, when given, is its initial
    value on every PE (the identity an output accumulates from). T10's compute-shift
    plans hold every tensor's partition resident, and a rotating tensor a second one to
    receive its neighbour's (T10 s5)."""

    name = "mtia.alloc"

    tile_name = prop_def(StringAttr, prop_name="name")
    pes = prop_def(IntegerAttr[I64])
    offset = prop_def(IntegerAttr[I64])
    fill = opt_prop_def(FloatAttr)
    tile = result_def(TileType)

    assembly_format = "attr-dict `:` type($tile)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, name: str, pes: int, offset: int, tile_type: TileType, fill: float | None = None):
        properties = {"name": StringAttr(name), "pes": _i64(pes), "offset": _i64(offset)}
        if fill is not None:
            properties["fill"] = FloatAttr(float(fill), 64)
        super().__init__(result_types=[tile_type], properties=properties)

    def verify_(self) -> None:
        if not 1 <= _int(self.pes) <= MAX_CORES:
            raise VerifyException(f"a tile lives on 1 to {MAX_CORES} PEs, got {_int(self.pes)}")
        if _int(self.offset) < 0:
            raise VerifyException(f"tile {self.tile_name.data} has a negative offset {_int(self.offset)}")


@irdl_op_definition
class LoadOp(IRDLOperation):
    """DMA each PE's partition of ``source`` (a tensor living in ``level``) into its tile:
    PE ``p`` reads the block at ``origins(p)``, zeros outside the tensor. PEs reading the
    same block share one multicast read, served once by the level. The loads of one
    operator are issued together: one latency, the PE's link carrying all of them."""

    name = "mtia.load"

    source = operand_def(TensorType)
    tile = operand_def(TileType)
    origins = prop_def(CORE_TABLE)
    level = prop_def(StringAttr)

    assembly_format = "$source `into` $tile attr-dict `:` type($source) `,` type($tile)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, source: SSAValue, tile: SSAValue, origins, level: str):
        super().__init__(operands=[source, tile], properties={"origins": table_attr(origins),
                                                               "level": StringAttr(level)})

    def verify_(self) -> None:
        tile = _tile(self.tile, "the destination")
        rank = len(self.source.type.get_shape())
        if rank != len(tile.get_shape()):
            raise VerifyException(f"cannot load a rank-{rank} tensor into a rank-{len(tile.get_shape())} tile")
        if self.source.type.get_element_type() != tile.element_type:
            raise VerifyException(f"element type mismatch: tensor of {self.source.type.get_element_type()} "
                                  f"into a tile of {tile.element_type}")
        if self.level.data not in LEVELS:
            raise VerifyException(f"level must be one of {', '.join(LEVELS)}, got '{self.level.data}'")
        pes = _tile_pes(self.tile)
        if pes is not None:
            _pes_table(self.origins, rank, pes, "origins")


@irdl_op_definition
class StepOp(IRDLOperation):
    """One compute step of a T10 plan on every PE (T10 s4.4 "compute"): each PE evaluates
    the expression over its tiles' windows starting at its rows of ``windows`` (output
    first; step tiles ``tiles`` per axis) and combines into its output window; a
    product of two reads runs on the DPE in 32x32x32 blocks, anything else on the SIMD
    engine. ``kind``, ``roles`` and ``dtype_bytes`` (the operator's element size, where
    the output tile holds wider partial sums) are the sub-task the cost model prices."""

    name = "mtia.step"

    output = operand_def(TileType)
    inputs = var_operand_def(TileType)
    expression = prop_def(ExprAttr)
    tiles = prop_def(DenseArrayBase)
    pes = prop_def(IntegerAttr[I64])
    windows = prop_def(ArrayAttr)
    kind = prop_def(StringAttr)
    roles = prop_def(DictionaryAttr)
    step = prop_def(IntegerAttr[I64])
    dtype_bytes = opt_prop_def(IntegerAttr[I64])

    assembly_format = (
        "$expression $output `,` `(` $inputs `)` attr-dict `:` type($output) `,` `(` type($inputs) `)`"
    )
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, expression: str, output: SSAValue, inputs: Sequence[SSAValue], tiles, pes: int, windows,
                 kind: str, roles: dict, step: int, dtype_bytes: int | None = None):
        properties = {
            "expression": ExprAttr(expression), "tiles": _array(tiles), "pes": _i64(pes),
            "windows": ArrayAttr([table_attr(w) for w in windows]), "kind": StringAttr(kind),
            "roles": DictionaryAttr({k: _i64(v) for k, v in roles.items()}), "step": _i64(step),
        }
        if dtype_bytes is not None:
            properties["dtype_bytes"] = _i64(dtype_bytes)
        super().__init__(operands=[output, list(inputs)], properties=properties)

    def parsed(self):
        return self.expression.expr

    def tile_map(self) -> dict[str, int]:
        return dict(zip(self.parsed().axes, _values(self.tiles)))

    def window_tables(self) -> list:
        pes = _int(self.pes)
        operands = [self.output, *self.inputs]
        return [_pes_table(w, len(v.type.get_shape()), pes, f"window #{i}")
                for i, (w, v) in enumerate(zip(self.windows.data, operands))]

    def subtask_bytes(self) -> int:
        if self.dtype_bytes is not None:
            return _int(self.dtype_bytes)
        return element_bytes(_tile(self.output, "the output").element_type)

    def verify_(self) -> None:
        expr = self.parsed()
        tiles = _values(self.tiles)
        if len(tiles) != len(expr.axes) or min(tiles, default=1) < 1:
            raise VerifyException(f"tiles must give a positive extent for each of the {len(expr.axes)} axes "
                                  f"({', '.join(expr.axes)}), got {list(tiles)}")
        if len(self.inputs) != len(expr.inputs):
            raise VerifyException(f"'{self.expression.text}' reads {len(expr.inputs)} tensor(s) but the op has "
                                  f"{len(self.inputs)} input tile(s)")
        if len(self.windows.data) != 1 + len(self.inputs):
            raise VerifyException(f"windows must give one table per tile (output first): expected "
                                  f"{1 + len(self.inputs)}, got {len(self.windows.data)}")
        if not 1 <= _int(self.pes) <= MAX_CORES:
            raise VerifyException(f"a step runs on 1 to {MAX_CORES} PEs, got {_int(self.pes)}")
        tile = dict(zip(expr.axes, tiles))
        accesses = [expr.output] + [expr.accesses_of(name)[0] for name in expr.inputs]
        names = [expr.output.tensor, *expr.inputs]
        for name, access, value, table in zip(names, accesses, [self.output, *self.inputs], self.window_tables()):
            shape = _tile(value, f"tile of {name}").get_shape()
            if len(shape) != len(access.indices):
                raise VerifyException(f"{name} has rank {len(access.indices)} but its tile has rank {len(shape)}")
            need = [shape[d] if isinstance(i, IndirectIndex) else
                    sum(abs(c) * (tile[a] - 1) for a, c in i.terms) + 1 for d, i in enumerate(access.indices)]
            end = table + np.array(need)
            if (table < 0).any() or (end > np.array(shape)).any():
                pe = int(np.argwhere((table < 0) | (end > np.array(shape)))[0][0])
                raise VerifyException(f"PE {pe}: the window of {name} at {table[pe].tolist()} with extent {need} "
                                      f"lies outside its tile of shape {list(shape)}")
        _verify_kind_roles(self.kind, self.roles)


@irdl_op_definition
class ShiftOp(IRDLOperation):
    """Rotate a tile around its rings over the NoC (T10 s4.4 "shift", on MTIA's PE grid):
    PE ``p`` receives the tile of PE ``source(p)`` through ``receive`` (a same-shaped
    tile: T10 s5's multi-copy shift), then the PEs meet at a barrier (the CP's atomic
    counters, section 3.1.6) before any computes again; afterwards ``tile`` holds the
    received data."""

    name = "mtia.shift"

    tile = operand_def(TileType)
    receive = operand_def(TileType)
    source = prop_def(CORE_TABLE)

    assembly_format = "$tile `through` $receive attr-dict `:` type($tile) `,` type($receive)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, tile: SSAValue, receive: SSAValue, source):
        super().__init__(operands=[tile, receive], properties={"source": table_attr(source)})

    def sources(self, pes: int) -> np.ndarray:
        return _pes_table(self.source, 1, pes, "source")[:, 0]

    def verify_(self) -> None:
        if self.tile.type != self.receive.type:
            raise VerifyException(f"the receive tile has type {self.receive.type} but the shifted tile "
                                  f"{self.tile.type}")
        pes = _tile_pes(self.tile)
        if pes is None:
            return
        source = self.sources(pes)
        if sorted(source.tolist()) != list(range(pes)):
            missing = sorted(set(range(pes)) - set(source.tolist()))
            raise VerifyException(f"source is not a permutation of the PEs 0..{pes - 1}: PE "
                                  f"{missing[0] if missing else int(source.max())}'s tile is sent to no PE")


@irdl_op_definition
class CombineOp(IRDLOperation):
    """Accumulate the partial copies of an output tile over the reduction network
    (section 3.4): the ``replicas`` PEs with an equal ``group(p)`` hold partial results of
    the same output partition, and the lowest of them receives their combination (sum
    for ``+=``, max/min for ``max=``/``min=``). ``out_resident_elems`` is the elements of a
    partition the chain carries (in the accumulators' width)."""

    name = "mtia.combine"

    tile = operand_def(TileType)
    group = prop_def(CORE_TABLE)
    replicas = prop_def(IntegerAttr[I64])
    combiner = prop_def(StringAttr)
    kind = prop_def(StringAttr)
    roles = prop_def(DictionaryAttr)
    out_step_elems = prop_def(IntegerAttr[I64])
    out_resident_elems = prop_def(IntegerAttr[I64])
    pes = prop_def(IntegerAttr[I64])

    assembly_format = "$tile attr-dict `:` type($tile)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, tile: SSAValue, group, replicas: int, combiner: str, kind: str, roles: dict,
                 out_step_elems: int, out_resident_elems: int, pes: int):
        super().__init__(operands=[tile], properties={
            "group": table_attr(group), "replicas": _i64(replicas), "combiner": StringAttr(combiner),
            "kind": StringAttr(kind), "roles": DictionaryAttr({k: _i64(v) for k, v in roles.items()}),
            "out_step_elems": _i64(out_step_elems), "out_resident_elems": _i64(out_resident_elems),
            "pes": _i64(pes)})

    def group_table(self) -> np.ndarray:
        return groups_from_keys(_pes_table(self.group, 1, _int(self.pes), "group")[:, 0], _int(self.replicas))

    def verify_(self) -> None:
        if self.combiner.data not in ("=", "+=", "max=", "min="):
            raise VerifyException(f"unknown combiner '{self.combiner.data}'")
        _verify_kind_roles(self.kind, self.roles)
        pes, replicas = _int(self.pes), _int(self.replicas)
        if not 1 <= pes <= MAX_CORES or replicas < 1 or pes % replicas:
            raise VerifyException(f"{pes} PEs cannot form groups of replicas={replicas}")
        keys = _pes_table(self.group, 1, pes, "group")[:, 0]
        _, counts = np.unique(keys, return_counts=True)
        if (counts != replicas).any():
            raise VerifyException(f"every group must hold replicas={replicas} PEs, but one holds "
                                  f"{int(counts[counts != replicas][0])}")


@irdl_op_definition
class PutOp(IRDLOperation):
    """Write the output partitions into the result tensor in ``level`` (DMA PutAddr): the
    lowest PE of each ``group`` writes its tile at ``origins(p)``, converted to the
    result's element type (integers wrap as INT32 does, floats round once); parts
    outside the tensor (padding) are dropped, elements no tile covers are zero."""

    name = "mtia.put"

    tile = operand_def(TileType)
    origins = prop_def(CORE_TABLE)
    group = prop_def(CORE_TABLE)
    level = prop_def(StringAttr)
    result = result_def(TensorType)

    assembly_format = "$tile attr-dict `:` type($tile) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, tile: SSAValue, origins, group, level: str, result_type: Attribute):
        super().__init__(operands=[tile], result_types=[result_type], properties={
            "origins": table_attr(origins), "group": table_attr(group), "level": StringAttr(level)})

    def writers(self, pes: int) -> np.ndarray:
        return group_leaders(_pes_table(self.group, 1, pes, "group")[:, 0])

    def verify_(self) -> None:
        tile = _tile(self.tile, "the source")
        rank = len(self.result.type.get_shape())
        if rank != len(tile.get_shape()):
            raise VerifyException(f"cannot put a rank-{len(tile.get_shape())} tile into a rank-{rank} tensor")
        if self.level.data not in LEVELS:
            raise VerifyException(f"level must be one of {', '.join(LEVELS)}, got '{self.level.data}'")
        pes = _tile_pes(self.tile)
        if pes is not None:
            _pes_table(self.origins, rank, pes, "origins")
            _pes_table(self.group, 1, pes, "group")


@irdl_op_definition
class FreeOp(IRDLOperation):
    """Release a tile's local memory on every PE."""

    name = "mtia.free"

    tile = operand_def(TileType)

    assembly_format = "$tile attr-dict `:` type($tile)"

    def __init__(self, tile: SSAValue):
        super().__init__(operands=[tile])


MTIA = Dialect("mtia", [CircularBufferInitOp, DmaOp, MatMulOp, ReduceOp, StoreOp, GatherOp, PoolOp, SimdOp,
                       TileOp, LoadOp, StepOp, ShiftOp, CombineOp, PutOp, FreeOp],
               [CircularBufferType, AccumulatorType, TileType, *PLAN_ATTRIBUTES])
