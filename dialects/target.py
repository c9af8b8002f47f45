"""The `irc` dialect: what a module is compiled for.

A module names its target once, as the module attribute ``irc.target``, set by the first
pass that needs a chip (``rtensor-partition``) and read by every later pass, verifier-free
analysis and interpreter. The attribute is self-contained: it carries the device's whole
description (the fields of its TOML file), so a compiled module runs anywhere, with no
device file beside it and no file read at all.

    module attributes {irc.target = #irc.target<"tiny16", "t10",
        {clock_hz = 1.0e+09 : f64, cores = 16 : i64, ...}>} { ... }
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.utils.exceptions import VerifyException

TARGET_ATTR = "irc.target"
"""The module attribute holding a module's `TargetAttr`."""


@irdl_attr_definition
class TargetAttr(ParametrizedAttribute):
    """A compilation target: the device ``device`` (its name), the cost model ``cost``
    that prices plans on it, and ``description``, the device's fields by name (integers,
    floats, strings and integer arrays), enough to rebuild the device description without
    its file."""

    name = "irc.target"

    device: StringAttr
    cost: StringAttr
    description: DictionaryAttr

    def __init__(self, device: str, cost: str, description: Mapping[str, Attribute]):
        super().__init__(StringAttr(device), StringAttr(cost), DictionaryAttr(dict(description)))

    @property
    def device_name(self) -> str:
        return self.device.data

    @property
    def cost_name(self) -> str:
        return self.cost.data

    def fields(self) -> dict[str, Attribute]:
        return dict(self.description.data)

    def verify(self) -> None:
        if not self.device.data:
            raise VerifyException("#irc.target needs a device name")
        if not self.cost.data:
            raise VerifyException("#irc.target needs a cost model name")
        for key, value in self.description.data.items():
            if not isinstance(value, (IntegerAttr, FloatAttr, StringAttr)) and not hasattr(value, "get_values"):
                raise VerifyException(f"#irc.target field '{key}' must be a number, a string or an array, got {value}")


def target_of(op: Operation) -> TargetAttr | None:
    """The target of the module enclosing ``op`` (the innermost module that names one)."""
    current: Operation | None = op
    while current is not None:
        attr = current.attributes.get(TARGET_ATTR)
        if isinstance(attr, TargetAttr):
            return attr
        current = current.parent_op()
    return None


IRC = Dialect("irc", [], [TargetAttr])
