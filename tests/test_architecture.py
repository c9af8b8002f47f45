"""The arrows of ARCHITECTURE.md, checked by reading every module's imports (including
imports inside functions): the IR carries its own meaning, so dialects need no planner,
planner and schedule hold no IR, and the interpreter never drives the tools."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# folders and the package each installs as
PACKAGES = {"irc": "irc", "dialects": "irc.dialects", "passes": "irc.passes", "lowering": "irc.lowering"}


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = list(relative.parts)
    parts[0] = PACKAGES[parts[0]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import in ``path``, relative ones resolved."""
    tree = ast.parse(path.read_text(), str(path))
    package = _module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else _module_name(path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            found += [(node.lineno, module)]
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def _sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _violations(folders: list[str], forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for folder in folders:
        for path in _sources(folder):
            for line, module in _imports(path):
                if any(module == f or module.startswith(f + ".") for f in forbidden):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: imports {module}")
    return sorted(set(bad))


def test_the_reader_sees_imports_at_any_depth():
    assert _module_name(ROOT / "dialects/te.py") == "irc.dialects.te"
    assert _module_name(ROOT / "irc/planner/__init__.py") == "irc.planner"
    # the tools import the runner (at the top or inside functions): the reader must see it
    assert _violations(["irc/tools"], ("irc.runner",))
    # a relative import resolves against its package
    source = ROOT / "irc/devices/__init__.py"
    assert any(name.startswith("irc.devices.loader") for _, name in _imports(source))


@pytest.mark.parametrize(
    "folders, forbidden, why",
    [
        (["dialects"], ("irc.planner", "irc.cost", "irc.devices", "irc.schedule", "irc.interpreter", "irc.lowering",
                        "irc.passes", "irc.tools", "irc.runner"),
         "dialects check local invariants; the chip-dependent checks are passes"),
        (["irc/interpreter"], ("irc.tools", "irc.runner", "irc.universe"),
         "the interpreter runs IR and never drives the tools"),
        (["irc/planner", "irc/schedule", "irc/cost", "irc/devices"],
         ("irc.dialects.te", "irc.dialects.rtensor", "irc.dialects.shift", "irc.dialects.device",
          "irc.dialects.target", "irc.lowering", "irc.passes", "irc.interpreter", "irc.runner", "irc.tools",
          "irc.universe", "xdsl.ir", "xdsl.dialects", "xdsl.irdl"),
         "planner, schedule, cost and devices hold no IR (the te language is allowed)"),
        (["lowering", "passes"], ("irc.tools", "irc.runner", "irc.universe"),
         "lowering and passes never drive the tools"),
        (["irc/frontend"], ("irc.tools", "irc.runner", "irc.lowering", "irc.passes", "irc.interpreter"),
         "the frontend only builds te IR"),
    ],
)
def test_arrows_point_down(folders, forbidden, why):
    assert _violations(folders, forbidden) == [], why


def test_frontend_modules_do_not_import_each_other_in_a_cycle():
    ops = {name for _, name in _imports(ROOT / "irc/frontend/onnx_ops.py")}
    assert not any(name.startswith("irc.frontend.onnx_import") for name in ops)
