"""The attributes of the `rtensor` dialect: the distributed tensor type and the idle plan.

`RTensorType` is a tensor's layout on the chip (spatial and temporal factors, replicas,
padded shape); `IdlePlanAttr` is how a weight-carrying operator's weights rest between
uses. Both are registered by, and re-exported from, `irc.dialects.rtensor`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr, TensorType
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from irc.dialects.dtypes import element_bytes


def _ints(values: Sequence[int]) -> ArrayAttr[IntAttr]:
    return ArrayAttr([IntAttr(int(v)) for v in values])


def _nested(values: Sequence[Sequence[int]]) -> ArrayAttr[ArrayAttr[IntAttr]]:
    return ArrayAttr([_ints(v) for v in values])


# ---------------------------------------------------------------------------
# The distributed tensor type
# ---------------------------------------------------------------------------


@irdl_attr_definition
class RTensorType(ParametrizedAttribute, TypeAttribute):
    """A tensor laid out over the cores of a chip (T10's rTensor, §4.1).

    ``shape`` and ``element_type`` are the global tensor's. Per dimension and per term
    of the index that dimension is read with, ``spatial`` gives the spatial factor
    f_s (the dimension is cut into that many core groups) and ``temporal`` the
    temporal factor f_t (each core's share is cut into that many sub-partitions that
    rotate around a ring, T10 §4.2). ``replicas`` counts the rings holding a full
    copy (cores sharing a partition / prod f_t); ``padded`` is the shape after
    padding every axis up to a multiple of its factors.
    """

    name = "rtensor.tensor"

    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    spatial: ArrayAttr[ArrayAttr[IntAttr]]
    temporal: ArrayAttr[ArrayAttr[IntAttr]]
    replicas: IntAttr
    padded: ArrayAttr[IntAttr]

    def __init__(
        self,
        shape: Sequence[int],
        element_type: Attribute,
        spatial: Sequence[Sequence[int]] | None = None,
        temporal: Sequence[Sequence[int]] | None = None,
        replicas: int = 1,
        padded: Sequence[int] | None = None,
    ):
        ones = [[1] for _ in shape]
        super().__init__(
            _ints(shape),
            element_type,
            _nested(ones if spatial is None else spatial),
            _nested(ones if temporal is None else temporal),
            IntAttr(int(replicas)),
            _ints(shape if padded is None else padded),
        )

    # -- accessors ---------------------------------------------------------
    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    def get_element_type(self) -> Attribute:
        return self.element_type

    @property
    def rank(self) -> int:
        return len(self.shape.data)

    @property
    def spatial_factors(self) -> tuple[tuple[int, ...], ...]:
        """f_s per dimension, per term of the dimension's index."""
        return tuple(tuple(f.data for f in dim.data) for dim in self.spatial.data)

    @property
    def temporal_factors(self) -> tuple[tuple[int, ...], ...]:
        """f_t per dimension, per term of the dimension's index."""
        return tuple(tuple(f.data for f in dim.data) for dim in self.temporal.data)

    @property
    def replica_count(self) -> int:
        return self.replicas.data

    @property
    def padded_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.padded.data)

    @property
    def element_bytes(self) -> int:
        return element_bytes(self.element_type)

    def dim_spatial(self, dim: int) -> int:
        """Core groups along one dimension (product over its index terms)."""
        return math.prod(self.spatial_factors[dim])

    def dim_temporal(self, dim: int) -> int:
        """Rotating sub-partitions along one dimension (product over its index terms)."""
        return math.prod(self.temporal_factors[dim])

    @property
    def cores(self) -> int:
        """Cores holding a piece of this tensor: spatial groups times replicas."""
        return math.prod(self.dim_spatial(d) for d in range(self.rank)) * self.replica_count

    def partition_shape(self) -> tuple[int, ...]:
        """Elements per dimension of the sub-partition resident on one core.

        The padded dimension is cut by its spatial and temporal factors; a compound
        dimension's halo (T10 §5) is not counted here (`irc.lowering.rtensor_plan.scored_plan`
        has the exact figure).
        """
        return tuple(
            -(-size // (self.dim_spatial(d) * self.dim_temporal(d)))
            for d, size in enumerate(self.padded_shape)
        )

    def partition_bytes(self) -> int:
        """Bytes of the sub-partition resident on one core."""
        return math.prod(self.partition_shape()) * self.element_bytes

    def with_global(self) -> TensorType:
        """The builtin tensor type of the same global tensor."""
        return TensorType(self.element_type, self.get_shape())

    # -- syntax ------------------------------------------------------------
    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        start = parser.pos
        shape, element_type = parser.parse_ranked_shape()
        rank = len(shape)
        fields: dict[str, object] = {}
        while parser.parse_optional_punctuation(",") is not None:
            pos = parser.pos
            key = parser.parse_identifier("rtensor.tensor field (fs, ft, replicas, padded)")
            if key in fields:
                parser.raise_error(f"field '{key}' given twice", pos, parser.pos)
            parser.parse_punctuation("=")
            if key in ("fs", "ft"):
                fields[key] = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: _parse_terms(parser)
                )
            elif key == "replicas":
                fields[key] = parser.parse_integer(allow_boolean=False, allow_negative=False)
            elif key == "padded":
                fields[key] = parser.parse_dimension_list()
            else:
                parser.raise_error(
                    f"unknown rtensor.tensor field '{key}' (expected fs, ft, replicas or padded)",
                    pos,
                    parser.pos,
                )
        end = parser.pos
        parser.parse_punctuation(">")
        ones = [[1]] * rank
        parameters = (
            _ints(shape),
            element_type,
            _nested(fields.get("fs", ones)),  # type: ignore[arg-type]
            _nested(fields.get("ft", ones)),  # type: ignore[arg-type]
            IntAttr(fields.get("replicas", 1)),  # type: ignore[arg-type]
            _ints(fields.get("padded", shape)),  # type: ignore[arg-type]
        )
        try:
            cls.new(parameters)
        except VerifyException as error:
            parser.raise_error(f"invalid !rtensor.tensor: {error}", start, end)
        return parameters

    def print_parameters(self, printer: Printer) -> None:
        shape = self.get_shape()
        dims = "".join(f"{d}x" for d in shape)
        printer.print_string(f"<{dims}")
        printer.print_attribute(self.element_type)
        printer.print_string(f", fs={_terms_text(self.spatial_factors)}")
        printer.print_string(f", ft={_terms_text(self.temporal_factors)}")
        if self.replica_count != 1:
            printer.print_string(f", replicas={self.replica_count}")
        if self.padded_shape != shape:
            printer.print_string(f", padded={'x'.join(str(d) for d in self.padded_shape)}")
        printer.print_string(">")

    def verify(self) -> None:
        shape = self.get_shape()
        rank = len(shape)
        if any(d < 0 for d in shape):
            raise VerifyException(f"rtensor.tensor needs a static shape, got {list(shape)}")
        for key, factors in (("fs", self.spatial_factors), ("ft", self.temporal_factors)):
            if len(factors) != rank:
                raise VerifyException(
                    f"{key} has {len(factors)} entries but the tensor has rank {rank}"
                )
            for dim, terms in enumerate(factors):
                if not terms or any(f < 1 for f in terms):
                    raise VerifyException(
                        f"{key} of dimension {dim} must be positive integers, got {list(terms)}"
                    )
        for dim, (fs, ft) in enumerate(zip(self.spatial_factors, self.temporal_factors)):
            if len(fs) != len(ft):
                raise VerifyException(
                    f"dimension {dim} has {len(fs)} index term(s) in fs but {len(ft)} in ft"
                )
        if self.replica_count < 1:
            raise VerifyException(f"replicas must be positive, got {self.replica_count}")
        padded = self.padded_shape
        if len(padded) != rank:
            raise VerifyException(f"padded shape {list(padded)} has rank {len(padded)}, not {rank}")
        for dim, (size, pad) in enumerate(zip(shape, padded)):
            if pad < size:
                raise VerifyException(
                    f"padded size {pad} of dimension {dim} is smaller than its size {size}"
                )


# ---------------------------------------------------------------------------
# The idle plan of a weight-carrying operator (model-wide planning)
# ---------------------------------------------------------------------------


@irdl_attr_definition
class IdlePlanAttr(ParametrizedAttribute):
    """How an operator's weights rest on chip between its uses (T10 §4.3.2, Figure 9).

    Model-wide planning (``rtensor-partition{mode=model}``) puts it on a weight-carrying
    ``rtensor.op`` as the attribute ``idle``. Per weight (an input tensor of the
    expression, by name) it gives the idle temporal factors, per dimension and per term
    of the index as in the tensor's type: each a multiple of the active ``ft`` of the
    operand's type, under the same ``F_op``, so every core keeps only a slice of the
    partition it needs when the op runs. ``bytes`` is what all the op's weights take
    per core at rest; ``setup`` is the cycles of gathering the missing slices into the
    active layout when the op starts (`irc.planner.idle.setup_cycles`, rounded up).

        #rtensor.idle<{B = [2,4]}, bytes = 512, setup = 1180>
    """

    name = "rtensor.idle"

    weights: ArrayAttr[StringAttr]
    temporal: ArrayAttr[ArrayAttr[ArrayAttr[IntAttr]]]
    idle_bytes: IntAttr
    setup: IntAttr

    def __init__(
        self, temporal: dict[str, Sequence[Sequence[int]]], idle_bytes: int, setup_cycles: int
    ):
        super().__init__(
            ArrayAttr([StringAttr(name) for name in temporal]),
            ArrayAttr([_nested(factors) for factors in temporal.values()]),
            IntAttr(int(idle_bytes)),
            IntAttr(int(setup_cycles)),
        )

    @property
    def weight_names(self) -> tuple[str, ...]:
        return tuple(w.data for w in self.weights.data)

    @property
    def temporal_factors(self) -> dict[str, tuple[tuple[int, ...], ...]]:
        """Idle f_t per weight, per dimension, per term of the dimension's index."""
        return {
            name: tuple(tuple(f.data for f in dim.data) for dim in factors.data)
            for name, factors in zip(self.weight_names, self.temporal.data)
        }

    @property
    def bytes_per_core(self) -> int:
        return self.idle_bytes.data

    @property
    def setup_cycles(self) -> int:
        return self.setup.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        temporal: dict[str, list[list[int]]] = {}

        def entry() -> None:
            pos = parser.pos
            name = parser.parse_identifier("weight tensor name")
            if name in temporal:
                parser.raise_error(f"weight '{name}' given twice", pos, parser.pos)
            parser.parse_punctuation("=")
            temporal[name] = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: _parse_terms(parser)
            )

        parser.parse_comma_separated_list(parser.Delimiter.BRACES, entry)
        values = {}
        for key in ("bytes", "setup"):
            parser.parse_punctuation(",")
            pos = parser.pos
            found = parser.parse_identifier(f"'{key}'")
            if found != key:
                parser.raise_error(f"expected '{key}' in #rtensor.idle, got '{found}'", pos, parser.pos)
            parser.parse_punctuation("=")
            values[key] = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation(">")
        return (
            ArrayAttr([StringAttr(name) for name in temporal]),
            ArrayAttr([_nested(f) for f in temporal.values()]),
            IntAttr(values["bytes"]),
            IntAttr(values["setup"]),
        )

    def print_parameters(self, printer: Printer) -> None:
        entries = ", ".join(
            f"{name} = {_terms_text(factors)}" for name, factors in self.temporal_factors.items()
        )
        printer.print_string(
            f"<{{{entries}}}, bytes = {self.bytes_per_core}, setup = {self.setup_cycles}>"
        )

    def verify(self) -> None:
        if not self.weights.data:
            raise VerifyException("#rtensor.idle needs at least one weight")
        if len(self.weights.data) != len(self.temporal.data):
            raise VerifyException(
                f"#rtensor.idle names {len(self.weights.data)} weight(s) but gives "
                f"{len(self.temporal.data)} factor list(s)"
            )
        for name, factors in self.temporal_factors.items():
            for dim, terms in enumerate(factors):
                if not terms or any(f < 1 for f in terms):
                    raise VerifyException(
                        f"idle ft of {name} dimension {dim} must be positive integers, got {list(terms)}"
                    )


def _parse_terms(parser: AttrParser) -> list[int]:
    """``4`` or ``2+1``: a dimension's factors, one per term of its index."""
    terms = [parser.parse_integer(allow_boolean=False, allow_negative=False)]
    while parser.parse_optional_punctuation("+") is not None:
        terms.append(parser.parse_integer(allow_boolean=False, allow_negative=False))
    return terms


def _terms_text(factors: tuple[tuple[int, ...], ...]) -> str:
    return "[" + ",".join("+".join(str(f) for f in dim) for dim in factors) + "]"


def tensor_like(type_: Attribute, what: str) -> tuple[tuple[int, ...], Attribute]:
    if isinstance(type_, RTensorType):
        return type_.get_shape(), type_.element_type
    if isinstance(type_, TensorType):
        return tuple(type_.get_shape()), type_.get_element_type()
    raise VerifyException(f"{what} must be a tensor or !rtensor.tensor, got {type_}")
