"""The shaped type the chip dialects share: a per-core (or per-PE) block of elements,
printed ``<4x8xf32>``. ``device.buffer`` and MTIA's ``mtia.cb``/``mtia.acc``/``mtia.tile``
derive from it and add only their name and, where it is narrower, their verifier."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from irc.dialects.dtypes import element_bytes


class LocalShapedType(ParametrizedAttribute, TypeAttribute):
    """A block of ``shape`` elements of ``element_type`` in one core's local memory (every
    core of a set holds its own). Its size in bytes is what allocation places."""

    shape: ArrayAttr[IntAttr]
    element_type: Attribute

    def __init__(self, shape: Sequence[int], element_type: Attribute):
        super().__init__(ArrayAttr([IntAttr(int(d)) for d in shape]), element_type)

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    def get_element_type(self) -> Attribute:
        return self.element_type

    @property
    def bytes(self) -> int:
        return math.prod(self.get_shape()) * element_bytes(self.element_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        shape, element_type = parser.parse_ranked_shape()
        parser.parse_punctuation(">")
        return (ArrayAttr([IntAttr(d) for d in shape]), element_type)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + "".join(f"{d}x" for d in self.get_shape()))
        printer.print_attribute(self.element_type)
        printer.print_string(">")

    def verify(self) -> None:
        if any(d.data < 1 for d in self.shape.data):
            raise VerifyException(f"{self.name} dimensions must be positive, got {list(self.get_shape())}")
        element_bytes(self.element_type)   # a block of elements of unknown size cannot be placed
