"""The `mtia` dialect's types and the checks its ops share.

A circular buffer (``!mtia.cb``) and an accumulator block (``!mtia.acc``) are one PE's
two-dimensional blocks; a tile (``!mtia.tile``) is one PE's partition under a T10 plan.
The helpers read and check the ops' properties. `irc.dialects.mtia` registers the types
and re-exports every public name here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_attr_definition
from xdsl.utils.exceptions import VerifyException

from irc.dialects.core_tables import core_table
from irc.dialects.dtypes import element_bytes
from irc.dialects.shaped import LocalShapedType
from irc.dialects.te_expr import OPERATOR_ROLES


MULTICAST = ("row", "column", "none")
LEVELS = ("sram", "dram")
DIRECTIONS = ("west-east", "north-south")


class _ShapedType(LocalShapedType):
    """A per-PE block of two dimensions, printed ``<128x512xi8>``."""

    def verify(self) -> None:
        if len(self.shape.data) != 2:
            raise VerifyException(f"{self.name} needs two positive dimensions, got {list(self.get_shape())}")
        super().verify()


@irdl_attr_definition
class CircularBufferType(_ShapedType):
    """One PE's slice of a tensor, held in a circular buffer of its local memory."""

    name = "mtia.cb"


@irdl_attr_definition
class AccumulatorType(_ShapedType):
    """One PE's block of partial sums in the reduction engine's accumulator banks."""

    name = "mtia.acc"


@irdl_attr_definition
class TileType(LocalShapedType):
    """One PE's partition of a tensor under a T10 plan, held in its local memory (any
    rank)."""

    name = "mtia.tile"

    def verify(self) -> None:
        if not self.shape.data:
            raise VerifyException(f"{self.name} needs positive dimensions, got []")
        super().verify()


def _int(attr: IntegerAttr) -> int:
    return int(attr.value.data)


def _i64(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def _array(values) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _values(array: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in array.get_values())


def _origin(map_attr: AffineMapAttr, rank: int, what: str) -> None:
    affine = map_attr.data
    if affine.num_dims != 2 or affine.num_symbols != 0:
        raise VerifyException(f"{what} must be an affine map of the PE's (row, column): (d0, d1) -> (...), "
                              f"got {affine}")
    if len(affine.results) != rank:
        raise VerifyException(f"{what} has {len(affine.results)} results for a rank-{rank} tensor")


def accumulator_element(element_type: Attribute) -> Attribute:
    """INT8 (any integer) products accumulate in INT32, FP16/BF16/FP32 in FP32."""
    return i32 if isinstance(element_type, IntegerType) else f32


def _integer_vector(value: SSAValue, what: str) -> None:
    shape = value.type.get_shape()  # type: ignore[union-attr]
    if len(shape) != 1 or not isinstance(value.type.get_element_type(), IntegerType):  # type: ignore[union-attr]
        raise VerifyException(f"{what} must be a 1-D tensor of integers, got {value.type}")


def simd_traffic(inputs: Sequence[SSAValue], output: SSAValue, levels: Sequence[str]) -> tuple[dict, dict]:
    """Bytes an operator streamed on the SIMD engines reads and writes per level: every
    operand read whole from its level (``levels[1:]``), the result written whole to
    ``levels[0]``."""
    read: dict = {}
    for level, value in zip(levels[1:], inputs):
        read[level] = read.get(level, 0.0) + float(
            math.prod(value.type.get_shape()) * element_bytes(value.type.get_element_type()))  # type: ignore
    out = output.type
    write = {levels[0]: float(math.prod(out.get_shape()) * element_bytes(out.get_element_type()))}  # type: ignore
    return read, write


def _tile(value: SSAValue, what: str) -> TileType:
    if not isinstance(value.type, TileType):
        raise VerifyException(f"{what} must be a !mtia.tile, got {value.type}")
    return value.type


def _pes_table(attr, columns: int, pes: int, what: str):
    try:
        return core_table(attr, columns, pes, what)
    except VerifyException:
        raise
    except Exception as error:  # a malformed dense table
        raise VerifyException(f"{what}: {error}") from None


def _verify_kind_roles(kind: StringAttr, roles: DictionaryAttr) -> None:
    """A sub-task's kind is one the cost models price and it states the roles that kind's
    price reads (a matmul's m, k, n and batch extents)."""
    if kind.data not in OPERATOR_ROLES:
        raise VerifyException(f"unknown kind '{kind.data}'; kinds are {', '.join(OPERATOR_ROLES)}")
    missing = [r for r in OPERATOR_ROLES[kind.data] if r not in roles.data]
    if missing:
        raise VerifyException(f"a {kind.data} sub-task needs roles {', '.join(missing)}")
