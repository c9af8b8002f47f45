"""Between a module's ``#irc.target`` and an MTIA-family device (seeds/001).

The same self-contained target attribute as the IPU kind's (``irc.lowering.target``):
the device's fields by name, so a lowered MTIA program runs without its device file.
Tuples of strings (the reduction network's directions) are written comma-separated.
"""

from __future__ import annotations

from functools import lru_cache

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from irc.devices import DeviceError, load_device
from irc.devices.mtia import MtiaDevice
from irc.dialects.target import TARGET_ATTR, TargetAttr, target_of
from irc.lowering.target import TargetError, described_device, target_attr


class MtiaTargetError(ValueError):
    """A module whose target is missing or is no MTIA device."""


def mtia_target_attr(device: MtiaDevice) -> TargetAttr:
    """The self-contained target of an MTIA device, priced by the ``mtia`` cost model."""
    return target_attr(device, "mtia")


@lru_cache(maxsize=16)
def mtia_device_of(target: TargetAttr) -> MtiaDevice:
    """The MTIA device a target describes (its fields checked against the family's
    schema as a device file's are; a bundled one by name when the description is
    empty)."""
    try:
        device = described_device(target)
    except TargetError as error:
        raise MtiaTargetError(str(error)) from None
    if getattr(device, "family", None) != "mtia":
        raise MtiaTargetError(f"the module targets '{target.device_name}', which is not an MTIA device")
    return device


def require_mtia_target(op: Operation) -> tuple[TargetAttr, MtiaDevice]:
    target = target_of(op)
    if target is None:
        raise MtiaTargetError("the module has no irc.target; run mtia-partition{device=...} first")
    return target, mtia_device_of(target)


def set_mtia_target(module: ModuleOp, device_name: str) -> TargetAttr:
    """Give ``module`` the target of MTIA device ``device_name`` (or check the one it has)."""
    try:
        device = load_device(device_name)
    except DeviceError as error:
        raise MtiaTargetError(str(error)) from None
    if getattr(device, "family", None) != "mtia":
        raise MtiaTargetError(f"device '{device.name}' is not of the mtia family")
    have = module.attributes.get(TARGET_ATTR)
    if isinstance(have, TargetAttr):
        if have.device_name != device.name:
            raise MtiaTargetError(f"the module targets device '{have.device_name}', not '{device.name}'; "
                                  f"one module has one target")
        return have
    target = mtia_target_attr(device)
    module.attributes[TARGET_ATTR] = target
    return target
