"""What a module's ``#irc.target`` means: the ``Device`` (of any family) and the
``CostModel`` it describes, read through the attribute and cached per attribute.

The device file is read once, when the target is set (``set_target``, ``set_mtia_target``);
from then on the device description comes from the attribute itself (``device_of``,
``npu_device_of``, ``mtia_device_of``), so passes, analyses and the interpreter never read
a file, and a compiled module moved elsewhere still runs. The attribute is the `irc`
dialect's (`irc.dialects.target`); reading it needs the devices and cost models, which
the dialects never import, so the reading sits here, above both and below every part
that needs the chip (lowering, passes, the interpreter, the drivers and tools).
"""

from __future__ import annotations

import dataclasses
import numbers
from functools import lru_cache

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, ModuleOp, StringAttr, f64, i64
from xdsl.ir import Attribute, Operation

from irc.cost import DEFAULT_COST_MODEL, CostModel, CostModelError, get_cost_model
from irc.devices import FAMILIES, ChipFamily, Device, DeviceError, device_from_fields, family_of, load_device
from irc.devices.loader import check_device_name
from irc.devices.mtia import MtiaDevice
from irc.devices.npu import NpuDevice
from irc.diagnostics import ops_children_first
from irc.dialects.target import TARGET_ATTR, TargetAttr, target_of

DEFAULT_DEVICE = "ipu-mk2"


class TargetError(ValueError):
    """A module without a target, or one whose target cannot be used."""


def field_attribute(value) -> Attribute:
    """A device field's value as an attribute of ``#irc.target`` (a tuple of names as one
    comma-separated string, a tuple of integers as a dense array)."""
    if isinstance(value, bool) or isinstance(value, int):
        return IntegerAttr(int(value), i64)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, tuple) and value and all(isinstance(v, str) for v in value):
        return StringAttr(",".join(value))
    if isinstance(value, tuple) and all(isinstance(v, numbers.Integral) for v in value):
        return DenseArrayBase.from_list(i64, [int(v) for v in value])
    raise TypeError(f"cannot write device field value {value!r} into IR")


def field_value(attr: Attribute):
    """A device field's value read back from ``#irc.target`` (``field_attribute``'s inverse,
    a tuple of names staying one comma-separated string)."""
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase):
        return tuple(int(v) for v in attr.get_values())
    raise TypeError(f"device field {attr} is not a number, a string or an integer array")


def target_attr(device, cost: str) -> TargetAttr:
    """The self-contained target of ``device`` (of any family) priced by cost model ``cost``."""
    if isinstance(device, Device):
        flat = device.fields()
    else:  # another family's flat dataclass
        flat = {f.name: getattr(device, f.name) for f in dataclasses.fields(device)}
    description = {name: field_attribute(value) for name, value in flat.items() if value is not None}
    return TargetAttr(device.name, cost, description)


def _ipu_kind(device, name: str) -> Device:
    """``device`` if the te -> rtensor -> shift -> device pipeline targets it (the IPU
    kind); another family's device level is its own (issue 16)."""
    if not isinstance(device, Device):
        family = family_of(device)
        raise TargetError(
            f"device '{name}' is of the {family.name} family, which the te -> rtensor -> shift -> device "
            f"pipeline does not target; {family.advice(name)}"
        )
    return device


@lru_cache(maxsize=64)
def device_of(target: TargetAttr) -> Device:
    """The ``Device`` a target describes (no file is read, unless the description is
    empty: ``#irc.target<"tiny16", "t10", {}>`` names a known device, for hand-written IR)."""
    return _ipu_kind(described_device(target), target.device_name)


@lru_cache(maxsize=16)
def npu_device_of(target: TargetAttr):
    """The ``NpuDevice`` (``irc.devices.npu``) a target of the ``npu`` family describes."""
    device = described_device(target)
    if not isinstance(device, NpuDevice):
        raise TargetError(f"#irc.target of '{target.device_name}' is not an NPU (family = \"npu\")")
    return device


def described_device(target: TargetAttr):
    """The device (of any family) a target describes: its fields, checked against its
    family's schema as a device file's are, or a bundled device by name when it states
    none."""
    try:
        name = check_device_name(target.device_name)  # a name, never a path to read
        fields = {key: field_value(attr) for key, attr in target.fields().items()}
        if not fields:
            return load_device(name)
        if fields.get("name") != name:
            raise DeviceError(f"#irc.target of '{name}' describes a device named {fields.get('name')!r}")
        return device_from_fields(fields, f"#irc.target of '{name}'")
    except (DeviceError, TypeError) as error:
        raise TargetError(f"#irc.target: {error}" if isinstance(error, TypeError) else str(error)) from None


@lru_cache(maxsize=16)
def cost_of(target: TargetAttr) -> CostModel:
    try:
        return get_cost_model(target.cost_name)
    except CostModelError as error:
        raise TargetError(str(error)) from None


def chip_cost_of(target: TargetAttr) -> CostModel:
    """The target's cost model, when it can time a chip program instruction by instruction
    (a compute step, a shift, a barrier, a reduction: what the chip interpreter and the
    device lowering price). A model that prices only whole operators (``engdesign``, the
    benchmark grader's, sets ``times_instructions = False``) plans but cannot time a
    program: an error naming it."""
    cost = cost_of(target)
    if not getattr(cost, "times_instructions", True):
        raise TargetError(
            f"cost model '{cost.name}' prices whole operators only and cannot time a chip "
            f"program; plan with it (irc-plan, rtensor-partition{{mode=op}}) and lower with "
            f"a cost model that times instructions (t10, seed003)"
        )
    return cost


def check_targets(module: ModuleOp) -> None:
    """Every ``#irc.target`` in ``module`` names a device and a cost model irc has, and
    its description is a valid device (the checks of a device file): a `TargetError`
    whose ``op`` is the op carrying the first bad one. The tools run this right after
    parsing, so a target is validated where it enters the IR."""
    for op in ops_children_first(module):
        target = op.attributes.get(TARGET_ATTR)
        if isinstance(target, TargetAttr):
            try:
                target_family(target).entry("target_reader")(target)
            except (TargetError, ValueError) as error:
                if not isinstance(error, TargetError):
                    error = TargetError(str(error))
                error.op = op
                raise error from None


def target_family(target: TargetAttr) -> ChipFamily:
    """The chip family a target describes (`irc.devices.families`); a `TargetError` for a
    family irc does not know or a device name it cannot find."""
    fields = target.fields()
    if not fields:  # a bundled device by name
        try:
            return family_of(load_device(check_device_name(target.device_name)))
        except DeviceError as error:
            raise TargetError(str(error)) from None
    # a description written in full: its own family field, absent for the IPU kind
    name = field_value(fields["family"]) if "family" in fields else "ipu"
    if name not in FAMILIES:
        raise TargetError(f"#irc.target of '{target.device_name}': unknown device family {name!r}; "
                          f"known: {', '.join(FAMILIES)}")
    return FAMILIES[name]


def check_ipu_target(target: TargetAttr) -> None:
    """An IPU-kind target's reading (its family's ``target_reader``): its device and cost
    model, each checked."""
    device_of(target)
    cost_of(target)


def require_target(op: Operation) -> TargetAttr:
    """The target of the module around ``op``; an error when none was set."""
    target = target_of(op)
    if target is None:
        raise TargetError(
            "the module has no irc.target; run rtensor-partition{device=... cost=...} (or "
            "irc-target{device=... cost=...}) first"
        )
    return target


def device_and_cost(op: Operation) -> tuple[Device, CostModel]:
    target = require_target(op)
    return device_of(target), cost_of(target)


def set_target(module: ModuleOp, device: str = "", cost: str = "") -> TargetAttr:
    """Give ``module`` its target (``resolve_target``) and write it."""
    target = resolve_target(module, device, cost)
    module.attributes[TARGET_ATTR] = target
    return target


def resolve_target(module: ModuleOp, device: str = "", cost: str = "") -> TargetAttr:
    """The target ``module`` has or gets, without writing it; an error when the module
    targets something else than asked for.

    An empty ``device``/``cost`` means "whatever the module already targets" (the
    defaults, ipu-mk2 and t10, for a module with no target). A module that targets
    another device or cost model than the one asked for is an error: one module, one
    target. A target written on functions (hand-written lower-level IR) counts as the
    module's when they all agree with it."""
    have = module.attributes.get(TARGET_ATTR)
    inner = {op.attributes[TARGET_ATTR] for op in module.walk()
             if op is not module and isinstance(op.attributes.get(TARGET_ATTR), TargetAttr)}
    if len(inner | ({have} if isinstance(have, TargetAttr) else set())) > 1:
        names = ", ".join(sorted(f"'{t.device_name}' ({t.cost_name})" for t in inner | {have} if t is not None))
        raise TargetError(f"the module's functions target different chips ({names}); one module has one target")
    if not isinstance(have, TargetAttr) and inner:
        (have,) = inner
    if isinstance(have, TargetAttr):
        if device:
            try:
                wanted = load_device(device).name
            except DeviceError as error:
                raise TargetError(str(error)) from None
            if wanted != have.device_name:
                raise TargetError(
                    f"the module targets device '{have.device_name}', not '{wanted}'; one module has one target"
                )
        if cost and cost != have.cost_name:
            raise TargetError(
                f"the module targets cost model '{have.cost_name}', not '{cost}'; one module has one target"
            )
        return have
    try:
        loaded = load_device(device or DEFAULT_DEVICE)
        get_cost_model(cost or DEFAULT_COST_MODEL)
    except (DeviceError, CostModelError) as error:
        raise TargetError(str(error)) from None
    return target_attr(_ipu_kind(loaded, loaded.name), cost or DEFAULT_COST_MODEL)


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
    if not isinstance(device, MtiaDevice):
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
    if not isinstance(device, MtiaDevice):
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
