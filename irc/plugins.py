"""What extends irc, by name: irc's own universe and the plug-ins'.

irc registers its own dialects, passes and cost models exactly as a plug-in does: as an
``IrcUniverse`` (``IRC_UNIVERSE``) of lazy factories, named by ``"module:attribute"``
strings so that this ground-floor module imports none of them. A plug-in, a package
outside this repository, exports under the entry-point group ``irc.plugins`` an xDSL
``Universe`` (its dialects and passes) or an ``IrcUniverse``, which may also carry cost
models and device descriptions. `irc.universe` merges the dialects and passes with
xDSL's, `irc.cost.registry` asks here for cost models and `irc.devices.loader` for
devices; a name two universes both register is an error naming both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path

from xdsl.universe import Universe

PLUGIN_GROUP = "irc.plugins"


class PluginError(Exception):
    """A plug-in that cannot be loaded or clashes with a registered name."""


class IrcUniverse(Universe):
    """An xDSL ``Universe`` that also brings cost models (name -> factory returning a
    ``irc.cost.CostModel`` class), devices (name -> factory returning the path of the
    device's TOML file) and gradient rules for te-autodiff."""

    def __init__(
        self,
        *,
        cost_models: Mapping[str, Callable[[], type]] | None = None,
        devices: Mapping[str, Callable[[], str | Path]] | None = None,
        gradient_rules: Mapping[str, Callable[[], object]] | None = None,
        **universe,
    ):
        super().__init__(**universe)
        self.cost_models = dict(cost_models or {})
        self.devices = dict(devices or {})
        self.gradient_rules = dict(gradient_rules or {})
        """name -> factory of a ``irc.passes.te_autodiff.GradientRule`` (te-autodiff)."""


def lazy(path: str) -> Callable[[], object]:
    """A factory importing ``module:attribute`` on first use, as xDSL's ``Universe``
    expects."""
    module_name, attribute = path.split(":")

    def load():
        return getattr(import_module(module_name), attribute)

    return load


IRC_UNIVERSE = IrcUniverse(
    all_dialects={
        "irc": lazy("irc.dialects.target:IRC"),
        "te": lazy("irc.dialects.te:TE"),
        "rtensor": lazy("irc.dialects.rtensor:RTENSOR"),
        "shift": lazy("irc.dialects.shift:SHIFT"),
        "device": lazy("irc.dialects.device:DEVICE"),
        "igo": lazy("irc.dialects.igo:IGO"),
        "mtia": lazy("irc.dialects.mtia:MTIA"),
        "npu": lazy("irc.dialects.npu:NPU"),
    },
    all_passes={
        # te -> rtensor: plan search per op (T10 §4.3) or model-wide (T10 §4.3.2, Alg. 1)
        "irc-target": lazy("irc.passes.set_target:SetTarget"),
        "rtensor-partition": lazy("irc.lowering.te_to_rtensor:RTensorPartition"),
        "rtensor-check": lazy("irc.passes.rtensor_check:RTensorCheck"),
        # rtensor -> shift: rings, paces, loop order (T10 §3.2, §4.4)
        "rtensor-to-shift": lazy("irc.lowering.rtensor_to_shift:RTensorToShift"),
        "rotation-align": lazy("irc.passes.rotation_align:RotationAlign"),
        # shift -> device: SPMD per-core code, then SRAM offsets
        "shift-to-device": lazy("irc.lowering.shift_to_device:ShiftToDevice"),
        "device-alloc": lazy("irc.passes.device_alloc:DeviceAlloc"),
        "preload-schedule": lazy("irc.passes.preload_schedule:PreloadSchedule"),
        # MTIA (seeds/001 s4): section 4's mapping on the te level, then per-PE programs
        "mtia-partition": lazy("irc.passes.mtia_partition:MtiaPartition"),
        "te-to-mtia": lazy("irc.lowering.te_to_mtia:TeToMtia"),
        # named pipelines
        "inference": lazy("irc.passes.pipelines:InferencePipeline"),
        # training: the backward pass (IGO §2.1)
        "te-autodiff": lazy("irc.passes.te_autodiff:TeAutodiff"),
        "igo-fuse": lazy("irc.lowering.igo_fuse:IgoFuse"),
        # igo -> npu: the NPU program of each fused layer (IGO §2.2, §4-5)
        "igo-to-npu": lazy("irc.lowering.igo_to_npu:IgoToNpu"),
        "te-to-npu": lazy("irc.lowering.te_to_npu:TeToNpu"),  # forward GEMMs on an NPU
        "training": lazy("irc.passes.pipelines:TrainingPipeline"),
    },
    cost_models={
        "t10": lazy("irc.cost.t10:T10CostModel"),            # measured IPU Mk2 constants
        "seed003": lazy("irc.cost.seed003:Seed003CostModel"),  # the T10 benchmark's prose
        "engdesign": lazy("irc.cost.engdesign:EngDesignCostModel"),  # the benchmark's grader
        "mtia": lazy("irc.cost.mtia:MtiaCostModel"),          # MTIA v1's PEs, memories and networks
        "igo": lazy("irc.cost.igo:IgoCostModel"),             # an NPU's tile schedules (IGO)
    },
    # bundled devices are the TOML files in irc/devices/, found by name (irc.devices.loader)
)


@cache
def plugin_universes() -> dict[str, Universe]:
    """The universes exported under ``irc.plugins``, by entry-point name."""
    found: dict[str, Universe] = {}
    for entry in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        try:
            universe = entry.load()
        except Exception as error:  # a broken plug-in must not take irc down silently
            raise PluginError(f"plug-in '{entry.name}' ({entry.value}) failed to load: {error}") from None
        if not isinstance(universe, Universe):
            raise PluginError(f"plug-in '{entry.name}' ({entry.value}) is not an xdsl.universe.Universe")
        found[entry.name] = universe
    return found


def _extensions(kind: str, attribute: str, with_irc: bool = False) -> dict[str, tuple[str, Callable]]:
    """name -> (owner, factory) over the plug-ins (and irc's own universe, first, when
    ``with_irc``); the owner is ``"irc"`` or the plug-in's entry-point name."""
    universes = list(plugin_universes().items())
    if with_irc:
        universes.insert(0, ("irc", IRC_UNIVERSE))
    merged: dict[str, tuple[str, Callable]] = {}
    for owner, universe in universes:
        for name, factory in getattr(universe, attribute, {}).items():
            if name in merged:
                first = merged[name][0]
                raise PluginError(
                    f"{kind} '{name}' from plug-in '{owner}' clashes with "
                    + ("irc's own" if first == "irc" else f"plug-in '{first}'")
                )
            merged[name] = (owner, factory)
    return merged


def cost_models() -> dict[str, tuple[str, Callable[[], type]]]:
    """Every cost model: irc's, then the plug-ins'; name -> (owner, factory of the class)."""
    return _extensions("cost model", "cost_models", with_irc=True)


def plugin_cost_models() -> dict[str, tuple[str, Callable[[], type]]]:
    """Cost models the plug-ins bring: name -> (plug-in, factory of the class)."""
    return _extensions("cost model", "cost_models")


def plugin_devices() -> dict[str, tuple[str, Callable[[], str | Path]]]:
    """Devices the plug-ins bring: name -> (plug-in, factory of the TOML path)."""
    return _extensions("device", "devices")


def plugin_gradient_rules() -> dict[str, tuple[str, Callable[[], object]]]:
    """Gradient rules the plug-ins bring: name -> (plug-in, factory of the rule)."""
    return _extensions("gradient rule", "gradient_rules")
