"""Device files validated against one schema per family (issue 27, item 6): every field
of every family's schema, given a value of another type or out of its range (by the
field's kind: `tests.fuzz_devices.bad_values`), deleted when required, or joined by an
unknown field, is one `DeviceError` naming the field at its line in the file, before any
dataclass is built; an inline ``#irc.target`` description is checked the same way."""

from __future__ import annotations

import re

import pytest

from irc.devices import DEVICE_DIR, DeviceError, device_from_fields, known_devices, load_device
from irc.devices.schema import CHOICES, Field, Schema, describe_value
from irc.target import field_value, target_attr
from tests.fuzz_devices import SCHEMAS, bad_values, delete_field, family_text, set_field

FIELDS = [(family, field) for family, schema in SCHEMAS.items() for field in schema.fields]


def _load(tmp_path, text: str):
    path = tmp_path / "dev.toml"
    path.write_text(text)
    return load_device(path), path


def _refused(tmp_path, text: str) -> DeviceError:
    with pytest.raises(DeviceError) as caught:
        _load(tmp_path, text)
    return caught.value


@pytest.mark.parametrize("family, field", FIELDS, ids=[f"{family}:{field.key}" for family, field in FIELDS])
def test_a_bad_value_of_every_field_is_named_at_its_line(tmp_path, family, field):
    values = bad_values(field) if field.key != "family" else ["[1, 2]", "{}", '"gpu"', "3", '""', "true"]
    for value in values:
        text, line = set_field(family_text(family), field.key, value)
        error = _refused(tmp_path, text)
        assert error.location == f"{tmp_path / 'dev.toml'}:{line}:1", (value, str(error))
        assert f"field '{field.key}' must be" in error.message, (value, error.message)
        assert "got " in error.message


@pytest.mark.parametrize("family", sorted(SCHEMAS))
def test_a_missing_required_field_is_named(tmp_path, family):
    for field in SCHEMAS[family].fields:
        if not field.required or field.key == "family":
            continue
        error = _refused(tmp_path, delete_field(family_text(family), field.key))
        assert f"missing field '{field.key}'" in error.message, error.message


@pytest.mark.parametrize("family", sorted(SCHEMAS))
def test_an_unknown_field_is_named_at_its_line(tmp_path, family):
    for table in sorted(SCHEMAS[family].tables):
        dotted = f"{table}.bogus" if table else "bogus"
        text, line = set_field(family_text(family), dotted, "1")
        error = _refused(tmp_path, text)
        assert error.location.endswith(f":{line}:1") and f"unknown field '{dotted}'" in error.message


@pytest.mark.parametrize("text, message", [
    ('family = [1, 2]\nname = "x"\n', "field 'family' must be one of ipu, mtia, npu (absent: ipu), got an array ([1, 2])"),
    ("family = {}\n", "field 'family' must be one of ipu, mtia, npu (absent: ipu), got a table"),
    ('name = "x"\ncores = 3\n', "field 'cores' must be a table [cores], got an integer (3)"),
    ('[name]\na = 1\n', "field 'name' must be a device name"),
    ('name = "x"\n[compute]\nsystolic = [16, "16"]\n',
     "field 'compute.systolic' must be a list of two positive integers (at most 2**20) [rows, cols], got [16, '16']"),
])
def test_messages_say_what_was_expected_and_what_came(tmp_path, text, message):
    """``family = [1, 2]`` was "internal error: unhashable type: 'list'"."""
    error = _refused(tmp_path, text)
    assert message in error.message, error.message


@pytest.mark.parametrize("name", [n for n in known_devices() if (DEVICE_DIR / f"{n.replace('-', '_')}.toml").exists()])
def test_every_bundled_device_round_trips_through_its_inline_description(name):
    device = load_device(name)
    fields = {key: field_value(attr) for key, attr in target_attr(device, "t10").fields().items()}
    assert device_from_fields(fields, "inline") == device


@pytest.mark.parametrize("name, field, value, message", [
    ("mtia-v1", "grid_rows", -1, "field 'grid_rows' must be a positive integer"),
    ("mtia-v1", "reduction_directions", "up,down", "field 'reduction_directions' must be a list of one or more"),
    ("mtia-v1", "accumulator_banks", 2, "field 'accumulator_banks' must be an integer of at least 4"),
    ("mtia-v1", "onchip_bytes", "big", "field 'onchip_bytes' must be a positive integer"),
    ("npu-edge", "pe_rows", 0, "field 'pe_rows/pe_cols' must be a list of two positive integers"),
    ("npu-edge", "spm_bytes_per_core", 1.5, "field 'spm_bytes_per_core' must be a positive integer"),
    ("npu-edge", "dataflow", "rs", "field 'dataflow' must be one of os, ws"),
    ("npu-edge", "family", "gpu", "field 'family' must be one of ipu, mtia, npu"),
    ("tiny16", "clock_hz", float("nan"), "field 'clock_hz' must be a positive, finite number"),
    ("tiny16", "bogus", 1, "unknown field 'bogus'"),
])
def test_inline_descriptions_of_every_family_are_checked_by_the_schema(name, field, value, message):
    """An MTIA or NPU description in ``#irc.target`` was built unchecked (a negative
    grid, an unknown reduction direction)."""
    fields = {key: field_value(attr) for key, attr in target_attr(load_device(name), "t10").fields().items()}
    fields[field] = value
    with pytest.raises(DeviceError, match=re.escape(message)):
        device_from_fields(fields, f"#irc.target of '{name}'")


def test_every_field_has_a_description_and_the_dataclass_reads_every_field():
    for schema in SCHEMAS.values():
        assert all(f.description for f in schema.fields)
        assert len({f.key for f in schema.fields}) == len(schema.fields)


def test_the_schema_words_its_expectations():
    assert Field("a", "integer", "x", minimum=1, maximum=1 << 20).expected() == "a positive integer (at most 2**20)"
    assert Field("a", CHOICES, "x", choices=("p", "q"), length=(1, 2)).expected() == \
        "a list of one or more distinct of p, q"
    assert describe_value([1, 2]) == "an array ([1, 2])" and describe_value({}) == "a table"
    assert isinstance(SCHEMAS["ipu"], Schema)
