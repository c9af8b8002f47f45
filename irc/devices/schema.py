"""One declarative schema per device family: every field a device file (or an inline
``#irc.target`` description) may hold, with its type, range, whether it is required,
and what it means. `validate` checks a parsed file against its family's schema before
any dataclass is built, so a malformed file is one error naming the field (at its line
when the loader knows it), never a failure inside the builder.

A schema lists fields by their dotted key in the file (``cores.count``); a field inside
an optional table (``offchip``) is required when the table is present. Checks between
fields (a mesh's size, a core count among the counts sold) stay in the family's
builder, which reads values `validate` has already checked.
"""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass
from typing import Any

INTEGER = "integer"
NUMBER = "number"
STRING = "string"
NAME = "name"
CHOICE = "choice"
INTEGERS = "integers"
CHOICES = "choices"

MAX_STRING = 4096
MAX_NAME_LENGTH = 128
"""The longest device name irc accepts (names are looked up as file names)."""
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
"""What a device name may hold."""
MAX_NUMBER = 1e15
MIN_POSITIVE = 1e-9


@dataclass(frozen=True)
class Field:
    """One field: ``key`` (dotted), ``kind`` (`INTEGER`, `NUMBER`, `STRING`, `NAME`,
    `CHOICE`, `INTEGERS`: a list of integers, `CHOICES`: a list of distinct choices),
    inclusive ``minimum``/``maximum`` (of each element, for lists), ``choices``,
    ``length`` (a list's least and most elements), ``required`` and ``description``;
    ``shape`` names a list's elements in messages (``[rows, cols]``)."""

    key: str
    kind: str
    description: str
    required: bool = True
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    length: tuple[int, int] = (1, 1 << 10)
    shape: str = ""

    def expected(self) -> str:
        """What the field must be, in words (the tail of an error message)."""
        if self.kind == INTEGER:
            return _integer_words(self.minimum, self.maximum)
        if self.kind == NUMBER:
            if self.minimum and self.minimum > 0:
                return f"a positive, finite number (between {self.minimum:g} and {self.maximum:g})"
            return f"a non-negative, finite number (at most {self.maximum:g})"
        if self.kind == STRING:
            return f"a {'non-empty ' if self.required else ''}string (at most {MAX_STRING} characters)"
        if self.kind == NAME:
            return f"a device name (letters, digits and _ . + -, at most {MAX_NAME_LENGTH} characters)"
        if self.kind == CHOICE:
            return f"one of {', '.join(self.choices)}"
        count = _count_words(self.length)
        if self.kind == INTEGERS:
            element = _integer_words(self.minimum, self.maximum).removeprefix("a ").removeprefix("an ")
            plural = element.replace("integer", "integers", 1)
            return f"a list of {count} {plural}" + (f" {self.shape}" if self.shape else "")
        return f"a list of {count} distinct of {', '.join(self.choices)}"


def _integer_words(minimum, maximum) -> str:
    sign = "a positive integer" if minimum == 1 else "a non-negative integer" if minimum == 0 else \
        f"an integer of at least {minimum:g}"
    if maximum is None:
        return sign
    power = int(maximum).bit_length() - 1
    bound = f"2**{power}" if 1 << power == maximum else f"{int(maximum)}"
    return f"{sign} (at most {bound})"


def _count_words(length: tuple[int, int]) -> str:
    low, high = length
    words = {1: "one", 2: "two", 3: "three"}
    if low == high:
        return words.get(low, str(low))
    return "one or more" if low == 1 else f"{low} to {high}"


@dataclass(frozen=True)
class Schema:
    """A family's fields, and its tables that may be absent as a whole."""

    family: str
    fields: tuple[Field, ...]
    optional_tables: tuple[str, ...] = ()

    @property
    def tables(self) -> dict[str, set[str]]:
        """Each table's keys (the top level's under "")."""
        found: dict[str, set[str]] = {"": set()}
        for f in self.fields:
            table, _, key = f.key.rpartition(".")
            found.setdefault(table, set()).add(key)
            if table:
                found[""].add(table)
        return found


def describe_value(value: Any) -> str:
    """A value as an error shows it: its TOML type and, for a short one, the value."""
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, int):
        return f"an integer ({value})" if abs(value) < 10**30 else f"an integer of {len(str(abs(value)))} digits"
    if isinstance(value, float):
        return f"a float ({value!r})"
    if isinstance(value, str):
        shown = repr(value if len(value) <= 60 else value[:60] + "...")
        return f"a string ({shown})"
    if isinstance(value, (list, tuple)):
        shown = repr(list(value))
        return f"an array ({shown if len(shown) <= 60 else shown[:60] + '...'})"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, (datetime.date, datetime.time)):
        return f"a date/time ({value})"
    return f"a {type(value).__name__}"


class FieldError(ValueError):
    """A field that breaks its schema: ``key`` (dotted) and the message about it."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key
        self.message = message


def _number_ok(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shown_value(value: Any) -> str:
    """A value of the right type as an error shows it (``repr``, cut at 80 characters)."""
    text = repr(list(value) if isinstance(value, tuple) else value)
    return text if len(text) <= 80 else text[:80] + "..."


_TYPES = {INTEGER: lambda v: isinstance(v, int) and not isinstance(v, bool), NUMBER: _number_ok,
          STRING: lambda v: isinstance(v, str), NAME: lambda v: isinstance(v, str),
          CHOICE: lambda v: isinstance(v, str), INTEGERS: lambda v: isinstance(v, (list, tuple)),
          CHOICES: lambda v: isinstance(v, (list, tuple))}


def check_field(f: Field, value: Any, name: str) -> None:
    """A `FieldError` when ``value`` is not what ``f`` allows (``name``: how the user
    wrote the field, for the message): a value of another type is named by its type
    (``got an array ([1, 2])``), one of the right type out of range by itself."""
    if _TYPES[f.kind](value) and _fits(f, value):
        return
    got = shown_value(value) if _TYPES[f.kind](value) else describe_value(value)
    raise FieldError(f.key, f"field {name!r} must be {f.expected()}, got {got}")


def _fits(f: Field, value: Any) -> bool:
    if f.kind == INTEGER:
        return _integer_in(value, f)
    if f.kind == NUMBER:
        return math.isfinite(value) and (f.minimum or 0) <= value <= f.maximum
    if f.kind == STRING:
        return len(value) <= MAX_STRING and (bool(value) or not f.required)
    if f.kind == NAME:
        return len(value) <= MAX_NAME_LENGTH and NAME_PATTERN.fullmatch(value) is not None
    if f.kind == CHOICE:
        return value in f.choices
    if not f.length[0] <= len(value) <= f.length[1]:
        return False
    if f.kind == INTEGERS:
        return all(_integer_in(v, f) for v in value)
    return all(isinstance(v, str) and v in f.choices for v in value) and len(set(value)) == len(value)


def _integer_in(value: Any, f: Field) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)
            and (f.minimum is None or value >= f.minimum) and (f.maximum is None or value <= f.maximum))


def validate(data: dict[str, Any], schema: Schema, names: dict[str, str] | None = None) -> None:
    """Check ``data`` (a parsed file: nested tables) against ``schema``: no unknown field
    or table, tables are tables and values are values, every required field present,
    each of the right type and range. A `FieldError` for the first field that is not;
    ``names`` maps a dotted key to the name the user wrote (inline descriptions)."""
    names = names or {}
    tables = schema.tables
    top = sorted(tables[""], key=lambda k: [f.key.split(".")[0] for f in schema.fields].index(k))
    for key, value in data.items():
        if key not in tables[""]:
            raise FieldError(key, f"unknown field {names.get(key, key)!r}; known fields: {', '.join(top)}")
        if key in tables:
            if not isinstance(value, dict):
                raise FieldError(key, f"field {names.get(key, key)!r} must be a table [{key}], got {describe_value(value)}")
            for sub in value:
                if sub not in tables[key]:
                    dotted = f"{key}.{sub}"
                    raise FieldError(dotted, f"unknown field {names.get(dotted, dotted)!r}; known fields of "
                                             f"[{key}]: {', '.join(sorted(tables[key]))}")
    present, missing = [], []
    for f in schema.fields:
        table, _, key = f.key.rpartition(".")
        holder = data.get(table) if table else data
        if holder is not None and key in holder:
            present.append((f, holder[key]))
        elif f.required and not (table in schema.optional_tables and table not in data):
            missing.append(f)
    for f, found in present:   # a value in the file first: its error is located
        check_field(f, found, names.get(f.key, f.key))
    # then the missing fields, those of the tables the file has first (located at the table)
    for f in sorted(missing, key=lambda f: "." in f.key and f.key.partition(".")[0] not in data):
        raise FieldError(f.key, f"missing field {names.get(f.key, f.key)!r}")


def value(data: dict[str, Any], key: str, default: Any = None) -> Any:
    """The value of dotted ``key`` in ``data`` (``default`` when absent)."""
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def flat_to_nested(values: dict[str, Any], flat: dict[str, Any], schema: Schema) -> tuple[dict[str, Any], dict[str, str]]:
    """An inline description's flat fields (``grid_rows``) as a file's nested tables,
    through ``flat`` (flat name -> dotted key, or ``(key, i)`` for element i of a list
    field; a name it lacks is kept as written, so `validate` names it as unknown), a
    list of choices written as one comma-separated string split; also dotted key ->
    the flat name(s), for messages."""
    data: dict[str, Any] = {}
    names = {target: name for name, target in flat.items() if isinstance(target, str)}
    for name, target in flat.items():
        if isinstance(target, tuple):   # one element of a list field: named by all of them
            names[target[0]] = "/".join(n for n, t in flat.items() if isinstance(t, tuple) and t[0] == target[0])
    for name, item in values.items():
        target = flat.get(name, name)
        if isinstance(item, tuple):
            item = list(item)
        if isinstance(target, tuple):   # one element of a list field
            target, index = target
            elements = value(data, target)
            elements = elements if isinstance(elements, list) else [None] * (index + 1)
            elements += [None] * (index + 1 - len(elements))
            elements[index] = item
            item = elements
        else:
            names[target] = name
        _store(data, target, item)
    for f in schema.fields:
        found = value(data, f.key)
        if f.kind == CHOICES and isinstance(found, str):
            _store(data, f.key, found.split(","))
    return data, names


def _store(data: dict[str, Any], key: str, item: Any) -> None:
    head, _, tail = key.partition(".")
    if not tail:
        data[head] = item
        return
    holder = data.setdefault(head, {})
    if isinstance(holder, dict):
        holder[tail] = item
