"""The chip families as one typed interface (`irc.devices.family.ChipFamily`) in one registry
(`irc.devices.families`): every bundled device belongs to the family its file names, every
family's entries resolve, and the registry is what the target reading and irc-plan ask."""

import tomllib

import pytest
from xdsl.dialects.builtin import ModuleOp

from irc.devices import DEVICE_DIR, FAMILIES, ChipFamily, family_named, family_of, load_device
from irc.devices.device import Device
from irc.devices.mtia import MtiaDevice
from irc.devices.npu import NpuDevice
from irc.target import check_targets, mtia_target_attr, target_attr, target_family
from irc.cost import get_cost_model
from irc.tools.family_planner import FamilyPlanner


def test_every_bundled_device_is_of_the_family_its_file_states():
    for path in sorted(DEVICE_DIR.glob("*.toml")):
        stated = tomllib.loads(path.read_text()).get("family", "ipu")
        device = load_device(path)
        family = family_of(device)
        assert family.name == stated, path.name
        assert family.describes(device) and family is family_named(stated)
        assert [f.name for f in FAMILIES.values() if f.describes(device)] == [stated]


def test_the_registry_holds_irc_families_each_with_its_dataclass():
    assert {name: f.device_type for name, f in FAMILIES.items()} == {
        "ipu": Device, "mtia": MtiaDevice, "npu": NpuDevice}
    assert all(isinstance(f, ChipFamily) and f.name == name for name, f in FAMILIES.items())


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_entry_resolves(name):
    family = FAMILIES[name]
    assert callable(family.entry("target_reader"))
    planner = family.entry("planner")   # irc-plan's planner of the family
    assert isinstance(planner, FamilyPlanner) and callable(planner.configure)
    assert callable(family.entry("inference"))
    if family.training:
        assert callable(family.entry("training"))
    if family.cost_model:   # the family's own cost model is a registered one
        assert get_cost_model(family.cost_model).name == family.cost_model
    assert "irc-opt -p" in family.advice("chip") and "chip" in family.advice("chip")


def test_what_is_no_device_of_a_family_is_refused():
    with pytest.raises(TypeError, match="no device of a known chip family"):
        family_of("ipu-mk2")
    with pytest.raises(KeyError, match="unknown device family 'gpu'; known: ipu, mtia, npu"):
        family_named("gpu")
    with pytest.raises(LookupError, match="has no planner"):
        ChipFamily("x", object, FAMILIES["ipu"].schema, {}, lambda f: None, "irc.target:device_of", "").entry("planner")


def test_a_target_is_read_by_its_family_reader():
    for name in ("tiny16", "mtia-v1", "npu-edge"):
        device = load_device(name)
        target = target_attr(device, "mtia" if name == "mtia-v1" else "igo" if name == "npu-edge" else "t10")
        assert target_family(target) is family_of(device)
    module = ModuleOp([])
    module.attributes["irc.target"] = mtia_target_attr(load_device("mtia-v1"))
    check_targets(module)
