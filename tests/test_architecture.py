"""The arrows of ARCHITECTURE.md, checked by reading every module's imports (including
imports inside functions): the IR carries its own meaning, so dialects need no planner,
planner and schedule hold no IR, and the interpreter executes IR: it never lowers it nor
drives the tools. No module imports itself through others (a circle of any length), and
an import inside a function says why on its line or the line above."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# folders and the package each installs as
PACKAGES = {"irc": "irc", "dialects": "irc.dialects", "passes": "irc.passes", "lowering": "irc.lowering"}
# the te language: the ground floor everything may import
TE_LANGUAGE = ("irc.dialects.te_expr", "irc.dialects.te_tree")

# (what the rule is for, folders it covers, imports they must not make, exceptions)
RULES = {
    "dialects check local invariants; the chip-dependent checks are passes": (
        ["dialects"],
        ("irc.planner", "irc.plans", "irc.cost", "irc.devices", "irc.schedule", "irc.interpreter", "irc.lowering",
         "irc.passes", "irc.tools", "irc.runner", "irc.frontend", "irc.target"),
        (),
    ),
    "the interpreter executes IR (target, dialects, cost, devices): it never lowers nor drives the tools": (
        ["irc/interpreter"],
        ("irc.tools", "irc.runner", "irc.universe", "irc.lowering", "irc.passes", "irc.planner", "irc.plans",
         "irc.schedule", "irc.frontend"),
        (),
    ),
    "the target's reading sits on the dialects, devices and cost models, below all that needs the chip": (
        ["irc/target.py"],
        ("irc.lowering", "irc.passes", "irc.interpreter", "irc.planner", "irc.plans", "irc.schedule", "irc.runner",
         "irc.tools", "irc.universe", "irc.frontend"),
        (),
    ),
    "planner, plans, schedule, cost and devices hold no IR (the te language is allowed)": (
        ["irc/planner", "irc/plans", "irc/schedule", "irc/cost", "irc/devices"],
        ("irc.dialects", "irc.lowering", "irc.passes", "irc.interpreter", "irc.runner", "irc.tools",
         "irc.universe", "irc.frontend", "irc.target", "xdsl.ir", "xdsl.dialects", "xdsl.irdl"),
        TE_LANGUAGE,
    ),
    "the schedule reads the plan vocabulary, never the planner's search": (
        ["irc/schedule"],
        ("irc.planner",),
        (),
    ),
    "the plan vocabulary sits below the planner and the schedule, which both read it": (
        ["irc/plans"],
        ("irc.planner", "irc.schedule"),
        (),
    ),
    "lowering and passes never drive the tools nor run what they lower (the interpreter)": (
        ["lowering", "passes"],
        ("irc.tools", "irc.runner", "irc.universe", "irc.interpreter"),
        (),
    ),
    "the frontend only builds te IR: of irc, it imports the dialects (and the ground floor)": (
        ["irc/frontend"],
        ("irc.tools", "irc.runner", "irc.lowering", "irc.passes", "irc.interpreter", "irc.planner",
         "irc.schedule", "irc.cost", "irc.devices", "irc.universe", "irc.compile", "irc.model_sources",
         "irc.dse", "irc.workloads", "irc.target"),
        (),
    ),
    "the runner imports only the interpreter, the frontend, the universe and the dialects": (
        ["irc/runner.py"],
        ("irc.tools", "irc.lowering", "irc.passes", "irc.planner", "irc.plans", "irc.schedule", "irc.cost",
         "irc.devices", "irc.compile", "irc.model_sources", "irc.dse", "irc.workloads", "irc.target"),
        (),
    ),
    "workloads build named models from the planner's vocabulary: no IR, no drivers": (
        ["irc/workloads"],
        ("irc.dialects", "irc.lowering", "irc.passes", "irc.interpreter", "irc.runner", "irc.tools",
         "irc.universe", "irc.frontend", "irc.target", "irc.schedule", "irc.compile", "irc.model_sources",
         "irc.dse", "xdsl"),
        # but marking an imported graph's weight inputs (graphs.graph.mark_weight_inputs)
        ("xdsl.dialects.builtin", "xdsl.dialects.func"),
    ),
    "nothing below the workloads imports them (the planner is beneath them)": (
        ["dialects", "lowering", "passes", "irc/interpreter", "irc/planner", "irc/plans", "irc/schedule",
         "irc/cost", "irc/devices", "irc/frontend", "irc/runner.py", "irc/universe.py", "irc/target.py"],
        ("irc.workloads",),
        (),
    ),
    "the drivers and tools are the top floor: nothing below imports them": (
        ["dialects", "lowering", "passes", "irc/interpreter", "irc/planner", "irc/plans", "irc/schedule", "irc/cost",
         "irc/devices", "irc/frontend", "irc/runner.py", "irc/universe.py", "irc/target.py"],
        ("irc.tools", "irc.compile", "irc.model_sources", "irc.dse"),
        (),
    ),
    "the ground floor (plug-in loader, utilities) imports no other part of irc": (
        ["irc/plugins.py", "irc/diagnostics.py", "irc/output.py", "irc/progress.py", "irc/plotting.py"],
        ("irc.dialects", "irc.lowering", "irc.passes", "irc.interpreter", "irc.planner", "irc.plans", "irc.schedule",
         "irc.cost", "irc.devices", "irc.frontend", "irc.runner", "irc.universe", "irc.tools",
         "irc.compile", "irc.model_sources", "irc.target"),
        (),
    ),
}

# Violations being removed, as "file: imports module" (no line number, so an edit
# elsewhere in the file does not unlist it). Each one found is skipped, not failed; one
# that no longer occurs fails `test_known_violations_still_exist`, so the set only shrinks.
KNOWN_VIOLATIONS: set[str] = set()


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = list(relative.parts)
    parts[0] = PACKAGES[parts[0]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@lru_cache(maxsize=None)   # every rule reads the same files
def _imports(path: Path) -> tuple[tuple[int, str], ...]:
    """(line, imported name) for every import in ``path`` at any depth, relative ones
    resolved; ``from m import x`` yields ``m.x``."""
    tree = ast.parse(path.read_text(), str(path))
    module_name = _module_name(path)
    package = module_name if path.name == "__init__.py" else module_name.rsplit(".", 1)[0]
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
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return tuple(found)


def _sources(folder: str) -> list[Path]:
    """The Python files of a folder (recursively), or the one file named."""
    path = ROOT / folder
    return [path] if path.is_file() else sorted(path.rglob("*.py"))


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _violations(folders: list[str], forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()):
    """(file, line, imported name) of every forbidden import in ``folders``."""
    bad = set()
    for folder in folders:
        for path in _sources(folder):
            for line, module in _imports(path):
                if _within(module, forbidden) and not _within(module, allowed):
                    bad.add((str(path.relative_to(ROOT)), line, module))
    return sorted(bad)


def _key(violation) -> str:
    file, _, module = violation
    return f"{file}: imports {module}"


def test_the_reader_sees_imports_at_any_depth():
    assert _module_name(ROOT / "dialects/te.py") == "irc.dialects.te"
    assert _module_name(ROOT / "irc/planner/__init__.py") == "irc.planner"
    # the tools import the runner (at the top or inside functions): the reader must see it
    assert _violations(["irc/tools"], ("irc.runner",))
    # a relative import resolves against its package
    source = ROOT / "irc/devices/__init__.py"
    assert any(name.startswith("irc.devices.loader") for _, name in _imports(source))
    # the te language is allowed where the rest of irc.dialects is not
    assert not _violations(["irc/schedule"], ("irc.dialects",), TE_LANGUAGE)
    assert _violations(["irc/schedule"], ("irc.dialects",))


@pytest.mark.parametrize("why", list(RULES))
def test_arrows_point_down(why):
    folders, forbidden, allowed = RULES[why]
    assert all(_sources(folder) for folder in folders), f"{why}: a listed folder or file has no sources"
    found = _violations(folders, forbidden, allowed)
    new = [f"{file}:{line}: imports {module}" for file, line, module in found
           if _key((file, line, module)) not in KNOWN_VIOLATIONS]
    assert not new, f"{why}:\n" + "\n".join(new)
    known = [_key(v) for v in found]
    if known:
        pytest.skip("known violations, being removed: " + "; ".join(known))


def test_known_violations_still_exist():
    found = {_key(v) for folders, forbidden, allowed in RULES.values()
             for v in _violations(folders, forbidden, allowed)}
    found |= {_key(v) for v in _whiteboard_violations()}
    gone = sorted(KNOWN_VIOLATIONS - found)
    assert not gone, "fixed, so remove from KNOWN_VIOLATIONS: " + "; ".join(gone)


def test_frontend_modules_do_not_import_each_other_in_a_cycle():
    ops = {name for path in (ROOT / "irc/frontend/onnx_ops").glob("*.py") for _, name in _imports(path)}
    graph = {name for _, name in _imports(ROOT / "irc/frontend/onnx_graph.py")}
    assert not any(name.startswith("irc.frontend.onnx_import") for name in ops | graph)
    assert not any(name.startswith("irc.frontend.onnx_ops") for name in graph)


def _all_modules() -> dict[str, Path]:
    return {_module_name(path): path for folder in PACKAGES for path in _sources(folder)}


def _owner(name: str, modules) -> str | None:
    """The module an imported name lives in (``irc.cost.CostModel`` -> ``irc.cost``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _module_graph() -> dict[str, set[str]]:
    """Every irc module -> the irc modules it imports, at any depth (inside functions too)."""
    modules = _all_modules()
    graph = {}
    for name, path in modules.items():
        targets = {_owner(imported, modules) for _, imported in _imports(path)}
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative): each is a set of modules that import one another in a circle."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_circle_finder_sees_circles_of_any_length():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
    # a module reached by a deferred import counts: the reader sees imports at any depth
    assert "irc.runner" in _module_graph()["irc.tools.irc_run"]


def test_no_module_imports_itself_through_others():
    circles = _circles(_module_graph())
    assert not circles, "modules importing one another in a circle:\n" + "\n".join(" -> ".join(c) for c in circles)


TOP_LEVEL_IMPORTS = list(PACKAGES)
"""Folders whose imports all sit at the top of each file, but for one whose line (or the
line above) says why it cannot (an optional extra, a platform's module)."""


def _deferred_imports(path: Path) -> list[int]:
    """Lines of the imports inside functions or classes of ``path`` that give no reason: a
    comment on the import's line, or above the run of import lines it belongs to."""
    tree = ast.parse(path.read_text(), str(path))
    lines = path.read_text().splitlines()
    top = {id(node) for statement in tree.body for node in ast.walk(statement)
           if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}

    def reasoned(line: int) -> bool:
        if "#" in lines[line - 1]:
            return True
        above = line - 1
        while above > 0 and lines[above - 1].strip().startswith(("from ", "import ")):
            above -= 1
        return above > 0 and lines[above - 1].strip().startswith("#")

    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top and not reasoned(node.lineno)]


def test_imports_sit_at_the_top_or_say_why_not():
    found = [f"{path.relative_to(ROOT)}:{line}" for folder in TOP_LEVEL_IMPORTS for path in _sources(folder)
             for line in _deferred_imports(path)]
    assert not found, "imports inside functions without a reason:\n" + "\n".join(found)


PARTS = {
    "irc.dialects.te_expr": "te language", "irc.dialects.te_tree": "te language",
    "irc.plugins": "ground floor", "irc.diagnostics": "ground floor",
    "irc.output": "ground floor", "irc.progress": "ground floor", "irc.plotting": "ground floor", "irc": "ground floor",
    "irc.devices": "devices", "irc.cost": "cost", "irc.planner": "planner", "irc.plans": "plans",
    "irc.schedule": "schedule",
    "irc.dialects": "dialects", "irc.target": "target", "irc.lowering": "lowering", "irc.passes": "passes",
    "irc.interpreter": "interpreter", "irc.frontend": "frontend", "irc.runner": "runner",
    "irc.compile": "drivers", "irc.model_sources": "drivers", "irc.dse": "drivers",
    "irc.universe": "universe", "irc.tools": "tools", "irc.workloads": "workloads",
}
"""Each module prefix's part of ARCHITECTURE.md (the longest prefix wins)."""

ARROWS = {
    "tools": {"drivers", "runner", "universe", "passes", "lowering", "frontend", "interpreter", "planner", "workloads"},
    "drivers": {"runner", "passes", "lowering", "frontend", "planner", "interpreter", "workloads"},
    "workloads": {"planner"},
    "runner": {"interpreter", "frontend", "universe", "dialects"},
    "universe": set(),
    "passes": {"lowering", "planner"},
    "lowering": {"target", "planner", "schedule"},
    "interpreter": {"target", "cost"},
    "frontend": {"dialects"},
    "target": {"dialects", "cost", "devices"},
    "dialects": set(),
    "schedule": {"plans"},
    "planner": {"plans"},
    "plans": {"cost"},
    "cost": {"devices"},
    "devices": set(),
    "te language": set(),
    "ground floor": set(),
}
"""ARCHITECTURE.md's allowed arrows between parts; a part may import what its arrows reach
(transitively), the te language and the ground floor."""


def _part(module: str) -> str:
    prefix = max((p for p in PARTS if module == p or module.startswith(p + ".")), key=len)
    return PARTS[prefix]


def _reachable(part: str) -> set[str]:
    seen, todo = {part, "te language", "ground floor"}, [part]
    while todo:
        for below in ARROWS[todo.pop()]:
            if below not in seen:
                seen.add(below)
                todo.append(below)
    return seen


def _whiteboard_violations():
    """(file, line, imported name) of every import from one part into a part its arrows do
    not reach."""
    modules = _all_modules()
    found = []
    for name, path in modules.items():
        allowed = _reachable(_part(name))
        for line, imported in _imports(path):
            owner = _owner(imported, modules)
            if owner is not None and _part(owner) not in allowed:
                found.append((str(path.relative_to(ROOT)), line, imported))
    return sorted(found)


def test_every_import_follows_an_arrow_of_the_whiteboard():
    assert set(PARTS.values()) == set(ARROWS)
    assert _reachable("lowering") >= {"planner", "cost", "devices", "dialects"}
    assert "interpreter" not in _reachable("lowering") and "planner" not in _reachable("interpreter")
    assert "planner" not in _reachable("schedule") and "plans" in _reachable("schedule")
    assert not {"planner", "schedule"} & _reachable("plans")
    assert "workloads" not in _reachable("planner") and "planner" in _reachable("workloads")
    found = _whiteboard_violations()
    new = [f"{file}:{line}: imports {module} ({_part(module)})" for file, line, module in found
           if _key((file, line, module)) not in KNOWN_VIOLATIONS]
    assert not new, "imports no arrow of ARCHITECTURE.md allows:\n" + "\n".join(new)
    if found:
        pytest.skip("known violations, being removed: " + "; ".join(sorted({_key(v) for v in found})))


def _asks_a_device_its_family(path: Path) -> list[int]:
    """Lines of ``path`` that read a ``family`` off an object (``getattr(x, "family")``,
    ``x.family``) instead of asking the registry."""
    tree = ast.parse(path.read_text(), str(path))
    return sorted(node.lineno for node in ast.walk(tree)
                  if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                      and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                      and node.args[1].value == "family")
                  or (isinstance(node, ast.Attribute) and node.attr == "family"))


def test_a_chip_family_is_asked_of_its_registry(tmp_path):
    """A device's family is the registry's answer (`irc.devices.families.family_of`, or an
    ``isinstance`` of its family's dataclass), never read off the device: the families'
    own modules (``irc/devices``) are the only ones that know the field."""
    asking = tmp_path / "asking.py"
    asking.write_text('getattr(device, "family", None)\nfamily = device.family\nNpuDevice(family="npu")\n')
    assert _asks_a_device_its_family(asking) == [1, 2]
    found = [f"{path.relative_to(ROOT)}:{line}" for folder in PACKAGES for path in _sources(folder)
             if not path.is_relative_to(ROOT / "irc/devices") for line in _asks_a_device_its_family(path)]
    assert not found, "a family read off a device instead of irc.devices.families:\n" + "\n".join(found)


MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 80
"""Readable units (issue 26, item 5): a newcomer reads a source file in a sitting and a
function on a screen or two. Tests and generated tables are not held to them."""


def _source_files():
    for folder in PACKAGES:
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_no_source_file_or_function_is_longer_than_a_sitting():
    too_long = []
    for path in _source_files():
        text = path.read_text()
        name = path.relative_to(ROOT)
        if text.count("\n") > MAX_FILE_LINES:
            too_long.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}:{node.lineno}: {node.name} has {length} lines")
    assert not too_long, "\n".join(too_long)
