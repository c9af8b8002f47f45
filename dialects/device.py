"""The `device` dialect: SPMD assembly for a bulk-synchronous inter-core chip.

DESIGN.md s3, T10 s4.4 ("allocate", "compute", "shift") and s5. Every instruction acts
on the core set ``[0, cores)`` at once; what differs between cores (where a tile starts,
which neighbour a ring receives from) is a function of the core id ``d0``, written as an
``affine_map<(d0) -> (...)>`` with one result per column (SPMD: the program's size does
not grow with the number of cores), or as a dense ``array<i64: ...>`` of ``cores`` rows
(or a single row shared by every core) where no closed form is known.
Buffers are SSA values of type ``!device.buffer<shape x dtype>``: the same-shaped
region of every core's SRAM. Host memory is builtin tensors. The chip is the module's ``irc.target``.

    %A = device.alloc {name = "A", cores = 16 : i64, bytes = 64 : i64, offset = 0 : i64}
           : !device.buffer<4x8xf16>
    device.load %a into %A {origins = affine_map<(d0) -> ((d0 mod 2) * 4, 0)>}
           : tensor<8x8xf16>, !device.buffer<4x8xf16>
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from irc.dialects.core_tables import (  # noqa: F401 (the per-core tables, re-exported to the device dialect's users)
    array_values,
    _check_origins,
    core_id,
    CORE_TABLE,
    core_table,
    core_vector,
    evaluate_affine,
    group_leaders,
    groups_from_keys,
    i64_array,
    i64_attr,
    _int,
    MAX_CORES,
    MAX_RELAYOUT_ELEMENTS,
    piece_attr,
    piece_table,
    simplify,
    table_attr,
)
from irc.dialects.device_checks import (  # noqa: F401 (BufferType and the movements' helpers, re-exported)
    BufferType,
    buffer_of,
    check_kind,
    check_windows,
    moves_properties,
    movements_of,
    ops_after,
    verify_moves,
)
from irc.dialects.dtypes import element_bytes  # noqa: F401 (re-exported to the chip's users)
from irc.dialects.te import ExprAttr
from irc.dialects.te_expr import IndirectIndex, gather_parts, product_reads


def _defining_cores(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, ReduceOp):  # a rounded result lives where its accumulator did
        return _defining_cores(owner.buffer)
    return _int(owner.cores) if isinstance(owner, AllocOp) else None


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Reserve ``bytes`` of SRAM at byte ``offset`` on every core of ``[0, cores)`` for a
    buffer named ``name`` (T10 s4.4 "allocate"). ``offset = -1`` means not yet placed;
    the `device-alloc` pass assigns offsets and checks that every core's SRAM holds its
    live buffers."""

    name = "device.alloc"

    buffer_name = prop_def(StringAttr, prop_name="name")
    cores = prop_def(IntegerAttr[I64])
    bytes = prop_def(IntegerAttr[I64])
    offset = prop_def(IntegerAttr[I64])
    buffer = result_def(BufferType)

    assembly_format = "attr-dict `:` type($buffer)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, name: str, buffer_type: BufferType, cores: int, offset: int = -1):
        super().__init__(
            result_types=[buffer_type],
            properties={
                "name": StringAttr(name), "cores": i64_attr(cores),
                "bytes": i64_attr(buffer_type.bytes), "offset": i64_attr(offset),
            },
        )

    def verify_(self) -> None:
        type_ = buffer_of(self.buffer, "the result")
        if not 1 <= _int(self.cores) <= MAX_CORES:
            raise VerifyException(
                f"buffer {self.buffer_name.data} is allocated on {_int(self.cores)} cores; irc handles 1 to {MAX_CORES}"
            )
        if _int(self.bytes) != type_.bytes:
            raise VerifyException(
                f"buffer {self.buffer_name.data} declares {_int(self.bytes)} bytes but "
                f"{type_} takes {type_.bytes}"
            )
        if _int(self.offset) < -1:
            raise VerifyException(f"buffer {self.buffer_name.data} has negative SRAM offset {_int(self.offset)}")


@irdl_op_definition
class FreeOp(IRDLOperation):
    """Release a buffer's SRAM on every core that holds it; it must not be used after."""

    name = "device.free"

    buffer = operand_def(BufferType)

    assembly_format = "$buffer attr-dict `:` type($buffer)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, buffer: SSAValue):
        super().__init__(operands=[buffer])


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Copy from a host tensor into a buffer: core ``c`` receives the tile of the tensor
    starting at ``origins(c)`` (one element index per dimension) with the buffer's
    shape; elements outside the tensor read as zero (padding). ``moves``, when present,
    are data movements (a transpose, a merge or split of axes) the transfer applies to
    the tensor first, each giving a tensor of the matching shape in ``moved_shapes``: the
    tiles are those of the last (a layout change at the model's edge costs no kernel)."""

    name = "device.load"

    source = operand_def(TensorType)
    buffer = operand_def(BufferType)
    origins = prop_def(CORE_TABLE)
    moves = opt_prop_def(ArrayAttr)
    moved_shapes = opt_prop_def(ArrayAttr)

    assembly_format = "$source `into` $buffer attr-dict `:` type($source) `,` type($buffer)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, source: SSAValue, buffer: SSAValue, origins, moves: Sequence[tuple[str, Sequence[int]]] = ()):
        super().__init__(operands=[source, buffer],
                         properties={"origins": table_attr(origins), **moves_properties(moves)})

    def movements(self) -> list[tuple[ExprAttr, tuple[int, ...]]]:
        return movements_of(self)

    def verify_(self) -> None:
        type_ = buffer_of(self.buffer, "the destination")
        rank = len(verify_moves(self, tuple(self.source.type.get_shape())))
        if rank != len(type_.get_shape()):
            raise VerifyException(
                f"cannot load a rank-{rank} tensor into a rank-{len(type_.get_shape())} buffer"
            )
        if self.source.type.get_element_type() != type_.element_type:
            raise VerifyException(
                f"element type mismatch: tensor of {self.source.type.get_element_type()} "
                f"into a buffer of {type_.element_type}"
            )
        cores = _defining_cores(self.buffer)
        if cores is not None:
            _check_origins(core_table(self.origins, rank, cores, "origins"), self.source.type.get_shape(),
                           type_.get_shape(), cores, "origins")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Assemble a host tensor from the tiles of the cores that lead their ``group``:
    cores with an equal ``group(c)`` hold copies of one tile and the lowest of them
    writes it, at ``origins(c)``; parts outside the tensor (padding) are dropped and
    elements no tile covers hold ``fill``. With ``moves``, the tiles assemble a tensor
    of ``shape`` that the transfer then moves (transposes, merges or splits axes), each
    movement giving a tensor of the matching shape in ``moved_shapes``; the result is the
    last."""

    name = "device.store"

    buffer = operand_def(BufferType)
    result = result_def(TensorType)
    origins = prop_def(CORE_TABLE)
    group = prop_def(CORE_TABLE)
    fill = prop_def(FloatAttr)
    shape = opt_prop_def(DenseArrayBase)
    moves = opt_prop_def(ArrayAttr)
    moved_shapes = opt_prop_def(ArrayAttr)

    assembly_format = "$buffer attr-dict `:` type($buffer) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, buffer: SSAValue, result_type: Attribute, origins, group, fill: float = 0.0,
                 moves: Sequence[tuple[str, Sequence[int]]] = (), shape: Sequence[int] | None = None):
        properties = {"origins": table_attr(origins), "group": table_attr(group), "fill": FloatAttr(float(fill), 64)}
        if moves:
            properties.update(moves_properties(moves))
            properties["shape"] = i64_array(shape)
        super().__init__(operands=[buffer], result_types=[result_type], properties=properties)

    def movements(self) -> list[tuple[ExprAttr, tuple[int, ...]]]:
        return movements_of(self)

    def assembled_shape(self) -> tuple[int, ...]:
        """The shape the tiles assemble (the result's without movements)."""
        if self.shape is None:
            return tuple(self.result.type.get_shape())
        return tuple(int(d) for d in array_values(self.shape))

    def writers(self, cores: int) -> np.ndarray:
        """The cores whose tiles are written: the lowest core of each group."""
        return group_leaders(core_vector(self.group, cores, "group"))

    def verify_(self) -> None:
        type_ = buffer_of(self.buffer, "the source")
        if (self.moves is None) != (self.shape is None):
            raise VerifyException("a store moves its tensor (moves) exactly when it states the assembled shape")
        final = verify_moves(self, self.assembled_shape())
        if final != tuple(self.result.type.get_shape()):
            raise VerifyException(f"the movements make a tensor of shape {list(final)}, but the result is {self.result.type}")
        rank = len(self.assembled_shape())
        if rank != len(type_.get_shape()):
            raise VerifyException(f"cannot store a rank-{len(type_.get_shape())} buffer as a rank-{rank} tensor")
        cores = _defining_cores(self.buffer)
        if cores is not None:
            _check_origins(core_table(self.origins, rank, cores, "origins"), self.result.type.get_shape(),
                           type_.get_shape(), cores, "origins")
            keys = core_vector(self.group, cores, "group")
            if keys.size != cores:
                raise VerifyException(f"group has {keys.size} entries, but the buffer lives on {cores} cores")


@irdl_op_definition
class RelayoutOp(IRDLOperation):
    """Move a tensor of shape ``shape`` from one on-chip layout into another over the
    exchange, never through the host: one exchange permutation (a BSP exchange phase,
    T10 s4.3.2's layout change between operators, s5's rearrangement before the next
    one). Stated as pieces when their SPMD form is known: destination core ``d0``
    receives, for each of ``piece_count`` pieces ``d1``, the box of ``piece_shape`` from
    the buffer of core ``pieces(d0, d1)[0]`` at the offsets that follow, written at the
    last ``rank`` offsets (boxes clipped to both buffers; every element of the target
    tile inside the tensor written by exactly one piece). Otherwise stated by where the
    tiles lie: the cores leading each ``source_group`` contribute their tile at
    ``source_origins(c)``, optionally through data movements ``moves`` (a transpose, a
    merge or split of axes, each giving a tensor of the matching shape in
    ``moved_shapes``). Either way core ``c`` of ``target`` holds the tile at
    ``origins(c)``, zeros outside the tensor. One primitive rather than a loop of
    ``device.shift``s: a shift rotates whole buffers around rings, while a layout change
    moves boxes of different offsets between arbitrary cores, which this op's pieces
    state exactly. Priced as the cost model's shift of ``bytes`` per core plus
    ``barriers`` barriers: a layout change is one shift event (the planner's relayout),
    a weight's ``setup`` from its idle layout gathers one slice per barrier (T10 s4.3.2)."""

    name = "device.relayout"

    source = operand_def(BufferType)
    target = operand_def(BufferType)
    shape = prop_def(DenseArrayBase)
    source_origins = opt_prop_def(CORE_TABLE)
    source_group = opt_prop_def(CORE_TABLE)
    origins = prop_def(CORE_TABLE)
    pieces = opt_prop_def(CORE_TABLE)
    piece_count = opt_prop_def(IntegerAttr[I64])
    piece_shape = opt_prop_def(DenseArrayBase)
    bytes = prop_def(IntegerAttr[I64])
    barriers = prop_def(IntegerAttr[I64])
    moves = opt_prop_def(ArrayAttr)
    moved_shapes = opt_prop_def(ArrayAttr)
    setup = opt_prop_def(UnitAttr)

    assembly_format = "$source `into` $target attr-dict `:` type($source) `,` type($target)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, source: SSAValue, target: SSAValue, shape, source_origins, source_group, origins,
                 nbytes: int, barriers: int, moves: Sequence[tuple[str, Sequence[int]]] = (), setup: bool = False,
                 pieces=None):
        """``pieces``: an ``irc.lowering.relayout_pieces.Pieces`` (then ``source_origins``
        and ``source_group`` are not stated)."""
        properties = {"shape": i64_array(shape), "origins": table_attr(origins),
                      "bytes": i64_attr(nbytes), "barriers": i64_attr(barriers)}
        if pieces is None:
            properties["source_origins"] = table_attr(source_origins)
            properties["source_group"] = table_attr(source_group)
        else:
            properties["pieces"] = piece_attr(pieces)
            properties["piece_count"] = i64_attr(pieces.count)
            properties["piece_shape"] = i64_array(pieces.shape)
        if setup:
            properties["setup"] = UnitAttr()
        properties.update(moves_properties(moves))
        super().__init__(operands=[source, target], properties=properties)

    def movements(self) -> list[tuple[ExprAttr, tuple[int, ...]]]:
        """The data movements on the way, with the shape each produces."""
        return movements_of(self)

    def target_shape(self) -> tuple[int, ...]:
        moved = self.movements()
        return moved[-1][1] if moved else tuple(int(d) for d in array_values(self.shape))

    def writers(self, cores: int) -> np.ndarray:
        """The source cores whose tiles are moved: the lowest core of each group."""
        return group_leaders(core_vector(self.source_group, cores, "source_group"))

    def piece_table(self, cores: int) -> np.ndarray:
        """(cores, piece_count, 1 + 2 * rank): every piece's source core and offsets."""
        rank = len(array_values(self.shape))
        return piece_table(self.pieces, _int(self.piece_count), 1 + 2 * rank, cores)

    def verify_(self) -> None:
        source, target = buffer_of(self.source, "the source"), buffer_of(self.target, "the target")
        shape = tuple(int(d) for d in array_values(self.shape))
        if any(d < 1 for d in shape):
            raise VerifyException(f"shape {list(shape)} must have positive extents")
        if math.prod(shape) > MAX_RELAYOUT_ELEMENTS:
            raise VerifyException(
                f"shape {list(shape)} has {math.prod(shape)} elements; a relayout moves at most "
                f"{MAX_RELAYOUT_ELEMENTS} (2**40)"
            )
        verify_moves(self, shape)
        rank, target_rank = len(array_values(self.shape)), len(self.target_shape())
        if len(source.get_shape()) != rank or len(target.get_shape()) != target_rank:
            raise VerifyException(
                f"a relayout of a rank-{rank} tensor into a rank-{target_rank} one needs buffers of those ranks, "
                f"got {source} and {target}"
            )
        if source.element_type != target.element_type:
            raise VerifyException(f"relayout keeps the element type, but moves {source} into {target}")
        for what in ("bytes", "barriers"):
            if _int(getattr(self, what)) < 0:
                raise VerifyException(f"{what} must not be negative, got {_int(getattr(self, what))}")
        tile_form = [self.source_origins is not None, self.source_group is not None]
        piece_form = [self.pieces is not None, self.piece_count is not None, self.piece_shape is not None]
        tiles = all(tile_form)
        if not (all(tile_form) and not any(piece_form) or all(piece_form) and not any(tile_form)):
            raise VerifyException(
                "a relayout states either its pieces (pieces, piece_count, piece_shape) or where the source "
                "tiles lie (source_origins, source_group), not both"
            )
        if not tiles:
            if self.moves is not None:
                raise VerifyException("data movements (moves) go with source tiles, not with pieces")
            if _int(self.piece_count) < 1 or len(array_values(self.piece_shape)) != rank \
                    or (array_values(self.piece_shape) < 1).any():
                raise VerifyException(
                    f"piece_count must be positive and piece_shape {rank} positive extents, got "
                    f"{_int(self.piece_count)} and {array_values(self.piece_shape).tolist()}"
                )
            cores = _defining_cores(self.target)
            if cores is not None:
                self.piece_table(cores)
        tables = [(self.target, self.origins, "origins")]
        if tiles:
            tables.append((self.source, self.source_origins, "source_origins"))
        for value, table, what in tables:
            cores = _defining_cores(value)
            if cores is not None:
                _check_origins(core_table(table, len(value.type.get_shape()), cores, what),
                               array_values(self.shape).tolist(), value.type.get_shape(), cores, what)


@irdl_op_definition
class FillOp(IRDLOperation):
    """Set every element of a buffer on every core to ``value`` (an accumulator's
    identity before the first step)."""

    name = "device.fill"

    buffer = operand_def(BufferType)
    value = prop_def(FloatAttr)

    assembly_format = "$buffer attr-dict `:` type($buffer)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, buffer: SSAValue, value: float):
        super().__init__(operands=[buffer], properties={"value": FloatAttr(float(value), 64)})


class ComputeOpBase(IRDLOperation):
    """Shared structure of `device.mma` and `device.vector`. ``dtype_bytes``, when present,
    is the element size the cost model prices the sub-task at (the operator's type) where
    the output buffer is a wider accumulator."""

    output = operand_def(BufferType)
    inputs = var_operand_def(BufferType)
    expression = prop_def(ExprAttr)
    tiles = prop_def(DenseArrayBase)
    cores = prop_def(IntegerAttr[I64])
    windows = prop_def(ArrayAttr)
    kind = prop_def(StringAttr)
    roles = prop_def(DictionaryAttr)
    step = prop_def(IntegerAttr[I64])
    dtype_bytes = opt_prop_def(IntegerAttr[I64])

    assembly_format = (
        "$expression $output `,` `(` $inputs `)` attr-dict `:` type($output) `,` `(` type($inputs) `)`"
    )
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, expression: str, output: SSAValue, inputs: Sequence[SSAValue], tiles, cores: int,
                 windows, kind: str, roles: dict[str, int], step: int, dtype_bytes: int | None = None):
        properties = {
            "expression": ExprAttr(expression), "tiles": i64_array(tiles),
            "cores": i64_attr(cores), "windows": ArrayAttr([table_attr(w) for w in windows]),
            "kind": StringAttr(kind),
            "roles": DictionaryAttr({k: i64_attr(v) for k, v in roles.items()}),
            "step": i64_attr(step),
        }
        if dtype_bytes is not None:
            properties["dtype_bytes"] = i64_attr(dtype_bytes)
        super().__init__(operands=[output, list(inputs)], properties=properties)

    def subtask_bytes(self) -> int:
        """The element size of the sub-task the cost model prices."""
        if self.dtype_bytes is not None:
            return _int(self.dtype_bytes)
        return element_bytes(buffer_of(self.output, "the output").element_type)

    def parsed(self):
        return self.expression.expr

    def tile_map(self) -> dict[str, int]:
        expr = self.parsed()
        return dict(zip(expr.axes, array_values(self.tiles).tolist()))

    def window_tables(self) -> list[np.ndarray]:
        cores = _int(self.cores)
        operands = [self.output, *self.inputs]
        return [
            core_table(w, len(v.type.get_shape()), cores, f"window #{i}")
            for i, (w, v) in enumerate(zip(self.windows.data, operands))
        ]

    def verify_(self) -> None:
        expr = self.parsed()
        tiles = array_values(self.tiles)
        if len(tiles) != len(expr.axes):
            raise VerifyException(
                f"tiles has {len(tiles)} entries but '{self.expression.text}' has {len(expr.axes)} axes "
                f"({', '.join(expr.axes)})"
            )
        if (tiles < 1).any():
            raise VerifyException(f"tiles must be positive, got {tiles.tolist()}")
        if len(self.inputs) != len(expr.inputs):
            raise VerifyException(
                f"'{self.expression.text}' reads {len(expr.inputs)} tensor(s) but the op has "
                f"{len(self.inputs)} input buffer(s)"
            )
        if len(self.windows.data) != 1 + len(self.inputs):
            raise VerifyException(
                f"windows must give one table per buffer (output first): expected "
                f"{1 + len(self.inputs)}, got {len(self.windows.data)}"
            )
        if not 1 <= _int(self.cores) <= MAX_CORES:
            raise VerifyException(f"a compute runs on 1 to {MAX_CORES} cores, got {_int(self.cores)}")
        check_windows(expr, dict(zip(expr.axes, tiles.tolist())), [self.output, *self.inputs],
                      self.window_tables())
        if _int(self.cores) < 1:
            raise VerifyException(f"a compute needs at least one core, got {_int(self.cores)}")
        if self.dtype_bytes is not None and _int(self.dtype_bytes) < 1:
            raise VerifyException(f"dtype_bytes must be positive, got {_int(self.dtype_bytes)}")
        check_kind(self.kind.data, self.roles)


@irdl_op_definition
class MmaOp(ComputeOpBase):
    """One compute step of a contraction ``OUT[...] += X[...] * Y[...]`` on the systolic
    array of every core (T10 s4.4 "compute"): each core multiplies the windows of its
    input buffers starting at its rows of ``windows`` (step tiles ``tiles`` per axis)
    and accumulates into its output window, in f32 for f16 data. ``kind`` and ``roles``
    are the sub-task the cost model prices."""

    name = "device.mma"

    def verify_(self) -> None:
        super().verify_()
        expr = self.parsed()
        if expr.combiner not in ("=", "+=") or product_reads(expr) is None:
            raise VerifyException(
                f"device.mma computes a product of two plainly indexed reads with '+=' or '=', "
                f"not '{self.expression.text}'; use device.vector"
            )


@irdl_op_definition
class VectorOp(ComputeOpBase):
    """One compute step of any other tensor expression (elementwise, reductions, windows
    such as convolution or pooling) on the vector units of every core: as `device.mma`,
    each core evaluates the expression over its windows and combines into its output."""

    name = "device.vector"


@irdl_op_definition
class GatherOp(ComputeOpBase):
    """One step of a gather ``Y[...] = E[..., I[...], ...]`` (ONNX Gather: an embedding
    lookup) on every core: each core reads the indices in its window of the index
    buffer and copies the rows of its table window they select into its output window.
    The table's indexed dims are resident whole in every core's partition (their window
    starts at 0), its other dims are windowed as any step's (the table may rotate along
    them between steps, T10's rotating tensor); the indices are global row numbers. An
    index outside the table's dim is a fault naming the op, the core and the value,
    never a wrapped or clamped read. Priced as the cost model's gather sub-task."""

    name = "device.gather"

    def verify_(self) -> None:
        super().verify_()
        found = gather_parts(self.parsed())
        if found is None:
            raise VerifyException(
                f"device.gather reads a table at the values of an index tensor (Y[i,j] = E[I[i],j]), "
                f"not '{self.expression.text}'; use device.vector"
            )
        table, _ = found
        position = self.parsed().inputs.index(table.tensor)
        window = self.window_tables()[1 + position]
        for dim, index in enumerate(table.indices):
            if isinstance(index, IndirectIndex) and window.size and (window[:, dim] != 0).any():
                raise VerifyException(
                    f"the table {table.tensor} is held whole along dim {dim} (read at '{index}'), so its "
                    f"window starts at 0 there on every core"
                )


@irdl_op_definition
class ShiftOp(IRDLOperation):
    """Rotate a buffer around its rings (T10 s4.4 "shift"): core ``c`` receives the
    buffer of core ``source(c)`` through ``receive`` (a same-shaped buffer, T10 s5
    "multi-copy shift with buffer"); afterwards ``buffer`` holds the received data."""

    name = "device.shift"

    buffer = operand_def(BufferType)
    receive = operand_def(BufferType)
    source = prop_def(CORE_TABLE)

    assembly_format = "$buffer `through` $receive attr-dict `:` type($buffer) `,` type($receive)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, buffer: SSAValue, receive: SSAValue, source):
        super().__init__(operands=[buffer, receive], properties={"source": table_attr(source)})

    def sources(self, cores: int) -> np.ndarray:
        return core_vector(self.source, cores, "source")

    def verify_(self) -> None:
        if self.buffer.type != self.receive.type:
            raise VerifyException(
                f"the receive buffer has type {self.receive.type} but the shifted buffer {self.buffer.type}"
            )
        if self.receive.type != self.buffer.type:
            return
        cores = _defining_cores(self.buffer)
        if isinstance(self.source, AffineMapAttr):
            if cores is None:
                return
            source = self.sources(cores)
        else:
            source = array_values(self.source)
        if source.size and sorted(source.tolist()) != list(range(source.size)):
            missing = sorted(set(range(source.size)) - set(source.tolist()))
            raise VerifyException(
                f"source is not a permutation of the cores 0..{source.size - 1}: core "
                f"{missing[0] if missing else int(source.max())}'s buffer is sent to no core"
            )
        cores = _defining_cores(self.buffer)
        if cores is not None and source.size > cores:
            raise VerifyException(
                f"the shift moves data on {source.size} cores but buffer lives on cores 0..{cores - 1}: "
                f"core {cores} has no buffer"
            )


@irdl_op_definition
class SyncOp(IRDLOperation):
    """A barrier over ``[0, cores)``: the exchange after a shift completes on every core
    before any core computes again (priced as the cost model's per-shift sync)."""

    name = "device.sync"

    cores = prop_def(IntegerAttr[I64])

    assembly_format = "attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, cores: int):
        super().__init__(properties={"cores": i64_attr(cores)})

    def verify_(self) -> None:
        if not 1 <= _int(self.cores) <= MAX_CORES:
            raise VerifyException(f"a barrier spans 1 to {MAX_CORES} cores, got {_int(self.cores)}")


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Combine the partial copies of an output buffer: the ``replicas`` cores with an
    equal ``group(c)`` hold copies of the same output partition, and the lowest of them
    receives their combination (sum for ``+=``). Priced as the cost model's output shuffle and
    partial-sum reduction (IPU_COST_FACTS s5) for sub-task ``kind``. With a result, the
    buffer is an accumulator (f32 partial sums of an f16 output) and the combination is
    rounded once into the result's narrower element type, in place: the result occupies
    the first bytes of the accumulator's SRAM, which is dead afterwards."""

    name = "device.reduce"

    buffer = operand_def(BufferType)
    result = opt_result_def(BufferType)
    group = prop_def(CORE_TABLE)
    replicas = prop_def(IntegerAttr[I64])
    combiner = prop_def(StringAttr)
    kind = prop_def(StringAttr)
    roles = prop_def(DictionaryAttr)
    out_step_elems = prop_def(IntegerAttr[I64])
    out_resident_elems = prop_def(IntegerAttr[I64])
    cores = prop_def(IntegerAttr[I64])

    assembly_format = "$buffer attr-dict `:` type($buffer) (`->` type($result)^)?"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, buffer: SSAValue, group, replicas: int, combiner: str, kind: str,
                 roles: dict[str, int], out_step_elems: int, out_resident_elems: int, cores: int,
                 rounded: Attribute | None = None):
        result_types = [] if rounded is None else [BufferType(buffer.type.get_shape(), rounded)]
        super().__init__(
            operands=[buffer],
            result_types=[result_types],
            properties={
                "group": table_attr(group), "replicas": i64_attr(replicas),
                "combiner": StringAttr(combiner), "kind": StringAttr(kind),
                "roles": DictionaryAttr({k: i64_attr(v) for k, v in roles.items()}),
                "out_step_elems": i64_attr(out_step_elems),
                "out_resident_elems": i64_attr(out_resident_elems), "cores": i64_attr(cores),
            },
        )

    def group_table(self) -> np.ndarray:
        """(groups, replicas) core ids of each partition's copies, lowest core first."""
        return groups_from_keys(core_vector(self.group, _int(self.cores), "group"), _int(self.replicas))

    def verify_(self) -> None:
        replicas = _int(self.replicas)
        if self.combiner.data not in ("=", "+=", "max=", "min="):
            raise VerifyException(f"unknown combiner '{self.combiner.data}'")
        cores = _int(self.cores)
        if not 1 <= cores <= MAX_CORES:
            raise VerifyException(f"a reduction runs on 1 to {MAX_CORES} cores, got {cores}")
        check_kind(self.kind.data, self.roles, compute=False)  # priced by its output shuffle alone
        if replicas < 1 or cores % replicas:
            raise VerifyException(f"{cores} cores cannot form groups of replicas={replicas}")
        keys = core_vector(self.group, cores, "group")
        if keys.size != cores:
            raise VerifyException(f"group has {keys.size} entries, but the reduction runs on {cores} cores")
        _, counts = np.unique(keys, return_counts=True)
        if (counts != replicas).any():
            raise VerifyException(
                f"every group must hold replicas={replicas} cores, but one holds {int(counts[counts != replicas][0])}"
            )
        if self.result is not None:
            accumulator, rounded = buffer_of(self.buffer, "the accumulator"), buffer_of(self.result, "the result")
            if accumulator.get_shape() != rounded.get_shape():
                raise VerifyException(
                    f"the rounded result {rounded} must have the accumulator's shape, {accumulator}"
                )
            if rounded.bytes > accumulator.bytes:
                raise VerifyException(
                    f"the rounded result {rounded} is rounded in place, so it cannot be wider "
                    f"than the accumulator {accumulator}"
                )


@irdl_op_definition
class PreloadAsyncOp(IRDLOperation):
    """Start loading a tensor from off-chip memory (HBM) into a buffer, asynchronously
    (ELK s4.5 ``preload_async``): core ``c`` receives the tile at ``origins(c)`` in the
    op's *preload-state* layout while the instructions after this one run. Preloads are
    served one after another in program order (ELK's rule 2); one placed after an
    operator's instructions starts when they are done (rule 1). The buffer may be touched
    only by the ``device.wait`` that completes it (rule 3), which must follow in the
    same block. ELK's data distribution into the execute state (s4.5 ``redistribute``)
    is the ``device.relayout {setup}`` that reads the waited buffer, not an op of its
    own: it is the same exchange permutation (pieces from the preload-state layout to
    the execute-state one) the all-on-chip program uses for a resting weight, priced,
    routed and contended with preloads alike. ``link_share`` (in (0, 1], absent: 1) paces
    it to that share of its busiest link (ELK's artifact's NoC load threshold θ); with
    ``yields`` it yields the link to a contending operator (``preload_yield``). ``moves``
    and ``moved_shapes`` are the transfer's data movements, as on ``device.load``."""

    name = "device.preload_async"

    source = operand_def(TensorType)
    buffer = operand_def(BufferType)
    origins = prop_def(CORE_TABLE)
    link_share = opt_prop_def(FloatAttr)
    yields = opt_prop_def(UnitAttr)
    moves = opt_prop_def(ArrayAttr)
    moved_shapes = opt_prop_def(ArrayAttr)

    assembly_format = "$source `into` $buffer attr-dict `:` type($source) `,` type($buffer)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, source: SSAValue, buffer: SSAValue, origins, moves: Sequence[tuple[str, Sequence[int]]] = ()):
        if not isinstance(origins, (AffineMapAttr, DenseArrayBase)):
            origins = table_attr(origins)
        super().__init__(operands=[source, buffer], properties={"origins": origins, **moves_properties(moves)})

    def movements(self) -> list[tuple[ExprAttr, tuple[int, ...]]]:
        return movements_of(self)

    def verify_(self) -> None:
        type_ = buffer_of(self.buffer, "the destination")
        rank = len(verify_moves(self, tuple(self.source.type.get_shape())))
        if rank != len(type_.get_shape()):
            raise VerifyException(f"cannot preload a rank-{rank} tensor into a rank-{len(type_.get_shape())} buffer")
        if self.source.type.get_element_type() != type_.element_type:
            raise VerifyException(
                f"element type mismatch: tensor of {self.source.type.get_element_type()} "
                f"into a buffer of {type_.element_type}"
            )
        cores = _defining_cores(self.buffer)
        if cores is not None:
            core_table(self.origins, rank, cores, "origins")
        share = self.link_share
        if share is not None and not 0.0 < share.value.data <= 1.0:
            raise VerifyException(f"link_share must be in (0, 1], got {share.value.data}")
        if self.parent is None:
            return
        for later in ops_after(self):
            if self.buffer in later.operands:
                if isinstance(later, WaitOp):
                    return
                raise VerifyException(
                    f"'{later.name}' uses the preloaded buffer before the device.wait that completes its preload"
                )
        raise VerifyException("the preload is never waited for: no device.wait of its buffer follows in the block")


@irdl_op_definition
class WaitOp(IRDLOperation):
    """Block every core until the preload into ``buffer`` has arrived (ELK s4.5: the
    ``done_preload`` tag is checked before an operator executes); afterwards the buffer
    holds the preloaded data and the op redistributes it into its *execute-state* layout
    over the exchange (``device.relayout``) or computes on it directly."""

    name = "device.wait"

    buffer = operand_def(BufferType)

    assembly_format = "$buffer attr-dict `:` type($buffer)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, buffer: SSAValue):
        super().__init__(operands=[buffer])

    def verify_(self) -> None:
        buffer_of(self.buffer, "the waited-for buffer")
        if self.parent is None:
            return
        current = self.prev_op
        while current is not None:
            if self.buffer in current.operands:
                if isinstance(current, PreloadAsyncOp):
                    return
                break
            current = current.prev_op
        raise VerifyException("no device.preload_async into this buffer precedes the wait in its block")


DEVICE = Dialect(
    "device",
    [AllocOp, FreeOp, LoadOp, StoreOp, RelayoutOp, FillOp, MmaOp, VectorOp, GatherOp, ShiftOp, SyncOp, ReduceOp,
     PreloadAsyncOp, WaitOp],
    [BufferType],
)
