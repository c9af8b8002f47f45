"""The plans `mtia-partition` puts on te ops for `te-to-mtia` (seeds/001 sections 4 and 6):
attributes of the ``mtia`` dialect, each a dictionary of named fields whose names, kinds
and ranges the attribute's verifier checks, printed ``#mtia.mapping<{grid = ..., ...}>``.
They live apart from the program's ops (``irc.dialects.mtia`` registers them) because a
plan is a decision about a te op, not an instruction of the PE program."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, DictionaryAttr, FloatAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

MAPPING_ATTR = "mtia.mapping"
ROTATION_ATTR = "mtia.rotation"
EMBEDDING_ATTR = "mtia.embedding"
STREAM_ATTR = "mtia.stream"
"""The names under which a te op carries each plan (the attributes' own names)."""

HOMES = ("sram", "dram")
"""Where a tensor lives: the chip's SRAM or its LPDDR (as ``mtia.dma``'s ``level``)."""


def _ints(value: Attribute) -> tuple[int, ...]:
    return tuple(int(v) for v in value.get_values())  # type: ignore[attr-defined]


class PlanAttr(ParametrizedAttribute):
    """A plan for one te op: named fields (``FIELDS``: name -> attribute kind) checked by
    kind, plus the checks of the plan's own invariants (``check``). ``data`` reads the
    fields as a dict, as a ``DictionaryAttr`` does."""

    fields: DictionaryAttr
    FIELDS: ClassVar[Mapping[str, type[Attribute]]] = {}
    KIND_NAMES: ClassVar[Mapping[type[Attribute], str]] = {
        DenseArrayBase: "array<i64: ...>", StringAttr: "a string", FloatAttr: "a float",
        IntegerAttr: "an integer", ArrayAttr: "a list", DictionaryAttr: "a dictionary"}

    def __init__(self, fields: Mapping[str, Attribute] | DictionaryAttr):
        super().__init__(fields if isinstance(fields, DictionaryAttr) else DictionaryAttr(dict(fields)))

    @property
    def data(self) -> dict[str, Attribute]:
        return self.fields.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        pos = parser.pos
        fields = parser.parse_attribute()
        if not isinstance(fields, DictionaryAttr):
            parser.raise_error(f"#{cls.name} expects a dictionary of its fields", pos, parser.pos)
        parser.parse_punctuation(">")
        return (fields,)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.fields)
        printer.print_string(">")

    def extra_field(self, name: str) -> bool:
        """A field beyond ``FIELDS`` that this plan allows."""
        return False

    def verify(self) -> None:
        fields = self.fields.data
        missing = [name for name in self.FIELDS if name not in fields]
        if missing:
            raise VerifyException(f"#{self.name} needs the field(s) {', '.join(missing)}")
        for name, kind in self.FIELDS.items():
            if not isinstance(fields[name], kind):
                raise VerifyException(f"#{self.name} field {name} must be {self.KIND_NAMES[kind]}, got {fields[name]}")
        unknown = [name for name in fields if name not in self.FIELDS and not self.extra_field(name)]
        if unknown:
            raise VerifyException(f"#{self.name} has unknown field(s) {', '.join(unknown)}; "
                                  f"it takes {', '.join(self.FIELDS)}")
        if fields["planned_cycles"].value.data < 0:  # type: ignore[attr-defined]
            raise VerifyException(f"#{self.name} planned_cycles must be non-negative")
        self.check(fields)

    def check(self, fields: dict[str, Attribute]) -> None:
        """The plan's own invariants, beyond the fields' kinds."""

    def positive(self, fields: dict[str, Attribute], name: str, count: int | None = None) -> tuple[int, ...]:
        field = fields[name]
        values = _ints(field) if isinstance(field, DenseArrayBase) else (int(field.value.data),)  # type: ignore
        if (count is not None and len(values) != count) or not values or min(values) < 1:
            shape = f"{count} positive integer(s)" if count else "positive integers"
            raise VerifyException(f"#{self.name} field {name} must be {shape}, got {list(values)}")
        return values

    def homes(self, fields: dict[str, Attribute], name: str, count: int | None = None) -> None:
        value = fields[name]
        entries = [value] if isinstance(value, StringAttr) else list(value.data)  # type: ignore[attr-defined]
        homes = [h.data if isinstance(h, StringAttr) else None for h in entries]
        if (count is not None and len(homes) != count) or any(h not in HOMES for h in homes):
            raise VerifyException(f"#{self.name} field {name} must name {count or 'the'} home(s) among "
                                  f"{', '.join(HOMES)}, got {value}")


@irdl_attr_definition
class MappingAttr(PlanAttr):
    """MTIA's own mapping of a matmul (section 4, Figure 7): the PE sub-grid, the splits of
    (batch, m, n, k), each PE's padded extents, which axis runs along the grid's rows and
    along which grid dimension k is reduced, how often each slice of A and B is read, the
    circular buffers' depths, the homes of C, A, B, the multicast groups of A and B (one
    ``multicast_<row|column>_<A|B>`` field each) and the predicted cycles."""

    name = "mtia.mapping"
    FIELDS: ClassVar[Mapping[str, type[Attribute]]] = {"grid": DenseArrayBase, "splits": DenseArrayBase, "per_pe": DenseArrayBase,
              "rows_axis": StringAttr, "k_along": StringAttr, "passes": DenseArrayBase,
              "depths": DenseArrayBase, "homes": ArrayAttr, "planned_cycles": FloatAttr}
    MULTICAST: ClassVar[re.Pattern[str]] = re.compile(r"multicast_(row|column)_(A|B)")

    def extra_field(self, name: str) -> bool:
        return self.MULTICAST.fullmatch(name) is not None

    def check(self, fields: dict[str, Attribute]) -> None:
        self.positive(fields, "grid", 2)
        self.positive(fields, "splits", 4)
        self.positive(fields, "per_pe", 4)
        self.positive(fields, "passes", 2)
        self.positive(fields, "depths", 2)
        self.homes(fields, "homes", 3)
        if fields["rows_axis"].data not in ("m", "n"):  # type: ignore[attr-defined]
            raise VerifyException(f"#{self.name} field rows_axis must be m or n, got {fields['rows_axis']}")
        if fields["k_along"].data not in ("cols", "rows"):  # type: ignore[attr-defined]
            raise VerifyException(f"#{self.name} field k_along must be cols or rows, got {fields['k_along']}")
        groups = sorted(self.MULTICAST.fullmatch(name).group(2) for name in fields if self.extra_field(name))
        if groups != ["A", "B"]:
            raise VerifyException(f"#{self.name} needs one multicast_<row|column>_A and one "
                                  f"multicast_<row|column>_B field")


@irdl_attr_definition
class RotationAttr(PlanAttr):
    """A T10 plan on the PE grid as cores (section 6, T10 s4.1-4.2 over the NoC): ``F_op``
    (``op_factors``, in the op's axis order), each tensor's temporal factors, the tensors'
    homes (output first) and the predicted cycles."""

    name = "mtia.rotation"
    FIELDS: ClassVar[Mapping[str, type[Attribute]]] = {"op_factors": DenseArrayBase, "temporal": DictionaryAttr, "homes": ArrayAttr,
              "planned_cycles": FloatAttr}

    def check(self, fields: dict[str, Attribute]) -> None:
        axes = len(self.positive(fields, "op_factors"))
        temporal = fields["temporal"].data  # type: ignore[attr-defined]
        for tensor, factors in temporal.items():
            if not isinstance(factors, DenseArrayBase) or len(_ints(factors)) != axes or min(_ints(factors)) < 1:
                raise VerifyException(f"#{self.name} temporal factors of {tensor} must be {axes} positive "
                                      f"integers (one per axis of op_factors), got {factors}")
        self.homes(fields, "homes", len(temporal))


@irdl_attr_definition
class EmbeddingAttr(PlanAttr):
    """An embedding bag's plan (section 6's DLRM tables): the tables' home, the PE grid
    the bags are spread over, the samples each PE pools, the depth (``window``) of the
    circular buffer its gathers fill, and the predicted cycles."""

    name = "mtia.embedding"
    FIELDS: ClassVar[Mapping[str, type[Attribute]]] = {"home": StringAttr, "grid": DenseArrayBase, "samples": IntegerAttr, "window": IntegerAttr,
              "planned_cycles": FloatAttr}

    def check(self, fields: dict[str, Attribute]) -> None:
        self.homes(fields, "home")
        self.positive(fields, "grid", 2)
        self.positive(fields, "samples")
        self.positive(fields, "window")


@irdl_attr_definition
class StreamAttr(PlanAttr):
    """An operator streamed on the PEs' SIMD engines: its tensors' homes (result first),
    the PEs it runs on and the predicted cycles."""

    name = "mtia.stream"
    FIELDS: ClassVar[Mapping[str, type[Attribute]]] = {"homes": ArrayAttr, "pes": IntegerAttr, "planned_cycles": FloatAttr}

    def check(self, fields: dict[str, Attribute]) -> None:
        self.homes(fields, "homes")
        self.positive(fields, "pes")


PLAN_ATTRIBUTES = (MappingAttr, RotationAttr, EmbeddingAttr, StreamAttr)
