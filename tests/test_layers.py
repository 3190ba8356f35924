"""The library's floors (docs/architecture.md): each package imports only the floors below it,
no two modules import each other (directly or through a cycle), and modules stay small.

Every import counts, including those inside functions and under ``TYPE_CHECKING``: a lazy
import is still a dependency."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib" / "binlake"

# Bottom to top.  ``config`` (one typed settings object) imports nothing of binlake and may be
# imported from every floor; ``binlake`` itself holds only the version.
FLOORS = ["binlog", "txn", "schema", "archive", "lake", "quality", "orchestrate", "cli"]
NEUTRAL = {"config", ""}
# Modules allowed past MAX_LINES: data tables, and lake/ until the throughput work splits it.
MAX_LINES = 650
LONG_OK = ("binlake.binlog.charsets", "binlake.lake.")


def modules() -> dict[str, Path]:
    out = {}
    for f in LIB.rglob("*.py"):
        parts = ("binlake", *f.relative_to(LIB).with_suffix("").parts)
        out[".".join(parts).removesuffix(".__init__")] = f
    return out


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            candidates = [target] + [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        else:
            continue
        for c in candidates:
            while c and c not in known:
                c = c.rsplit(".", 1)[0] if "." in c else ""
            if c and c != name:
                found.add(c)
    return found


def floor_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


MODS = modules()
GRAPH = {n: imports_of(n, p, MODS) for n, p in MODS.items()}


def test_floors_known() -> None:
    unknown = {floor_of(n) for n in MODS} - set(FLOORS) - NEUTRAL
    assert not unknown, f"packages outside the floors (add them to FLOORS and the docs): {unknown}"


@pytest.mark.parametrize("name", sorted(MODS))
def test_imports_only_downward(name: str) -> None:
    mine = floor_of(name)
    up = []
    for dep in GRAPH[name]:
        theirs = floor_of(dep)
        if theirs in NEUTRAL or theirs == mine:
            continue
        if mine in NEUTRAL and mine == "config":
            up.append(dep)  # config imports nothing of binlake
        elif mine in FLOORS and FLOORS.index(theirs) > FLOORS.index(mine):
            up.append(dep)
    assert not up, f"{name} ({mine}) imports a higher floor: {sorted(up)}"


def test_no_import_cycles() -> None:
    # a package's __init__ importing its own submodules is how packages re-export: not a cycle
    graph = {n: {d for d in deps if not (MODS[d].name == "__init__.py" and n.startswith(d + "."))
                 and not (MODS[n].name == "__init__.py" and d.startswith(n + "."))}
             for n, deps in GRAPH.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_modules_small() -> None:
    long = {n: sum(1 for _ in p.open()) for n, p in MODS.items()}
    over = {n: k for n, k in long.items() if k > MAX_LINES and not n.startswith(LONG_OK)}
    assert not over, f"modules over {MAX_LINES} lines (split them by role): {over}"


def test_checker_catches_an_upward_import(tmp_path: Path) -> None:
    """The walk above sees relative, absolute and function-level imports."""
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from ..lake import job\n    import binlake.cli\n")
    known = {"binlake.binlog.x": f, "binlake.lake.job": f, "binlake.lake": f, "binlake.cli": f}
    assert imports_of("binlake.binlog.x", f, known) == {"binlake.lake", "binlake.lake.job",
                                                        "binlake.cli"}
