"""The package's import graph, read with ``ast``: no import cycles, no import against the order of
the stages that ``docs/architecture.md`` lists, and no module takes another module's private names
(nor a private module of another package); the benchmark scripts and the paper's build import
flysearch's public names only.

Every import counts, inside functions and under ``if TYPE_CHECKING:`` too: a cycle closed at call
time, or by a type annotation, is still a cycle in the design.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "flysearch"
SCRIPTS = (ROOT / "benchmarks", ROOT / "paper")  # thin callers of the public API
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}




def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


@functools.cache
def _parse(path: Path) -> ast.Module:
    """*path*'s syntax tree, read once for all the checks."""
    return ast.parse(path.read_text(), str(path))


def _imports(modules: dict[str, Path]) -> Iterator[tuple[str, str, str | None]]:
    """``(importer, imported module, name)`` for every flysearch import (name ``None`` for
    ``import flysearch.x``)."""
    for module, path in modules.items():
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("flysearch"):
                        yield module, alias.name, None
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, path.name == "__init__.py", node)
                if not target.startswith("flysearch"):
                    continue
                for alias in node.names:
                    submodule = f"{target}.{alias.name}"
                    if submodule in modules:  # ``from flysearch.pkg import module``
                        yield module, submodule, None
                    else:
                        yield module, target, alias.name


def _owner(module: str, modules: dict[str, Path]) -> str:
    """The package a module belongs to (itself, for a package's ``__init__``)."""
    return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]


def test_no_module_takes_another_modules_private_names() -> None:
    modules = _modules()
    found = []
    for importer, imported, name in _imports(modules):
        if imported not in modules or imported == importer:
            continue
        if name is not None and name.startswith("_") and not name.startswith("__"):
            found.append(f"{importer} imports {name} from {imported}")
        private = [part for part in imported.split(".") if part.startswith("_") and not part.startswith("__")]
        if private and not importer.startswith(_owner(imported, modules)):
            found.append(f"{importer} imports the private module {imported}")
    assert not found, "\n".join(sorted(set(found)))


def _private(name: str) -> bool:
    """A private name or module part: one leading underscore (``__init__``, ``__main__`` are not)."""
    return name.startswith("_") and not name.startswith("__")


def _private_imports(scripts: dict[str, Path]) -> list[str]:
    """Each import of a private flysearch module or name by *scripts* (label -> path)."""
    found = []
    for script, imported, name in _imports(scripts):
        if any(_private(part) for part in imported.split(".")):
            found.append(f"{script} imports the private module {imported}")
        if name is not None and _private(name):
            found.append(f"{script} imports {name} from {imported}")
    return sorted(set(found))


def test_scripts_import_public_names_only() -> None:
    scripts = {str(p.relative_to(ROOT)): p for folder in SCRIPTS for p in sorted(folder.rglob("*.py"))}
    assert scripts
    found = _private_imports(scripts)
    assert not found, "\n".join(found)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_the_import_graph_has_no_cycle() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for importer, imported, _name in _imports(modules):
        if imported in modules and imported != importer:
            graph[importer].add(imported)
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_the_checks_see_a_cycle_and_a_private_import(tmp_path: Path) -> None:
    """The checks can fail: two modules that import each other, one of them a private name."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert _cycles(graph) == [["a", "b"]]
    (tmp_path / "flysearch").mkdir()
    (tmp_path / "flysearch" / "a.py").write_text("from flysearch.b import _hidden\n")
    (tmp_path / "flysearch" / "b.py").write_text("if TYPE_CHECKING:\n    from flysearch import a\n")
    modules = {_module_name(p, tmp_path / "flysearch"): p for p in (tmp_path / "flysearch").glob("*.py")}
    assert sorted(_imports(modules)) == [("flysearch.a", "flysearch.b", "_hidden"),
                                         ("flysearch.b", "flysearch.a", None)]


def test_the_script_check_sees_private_imports(tmp_path: Path) -> None:
    """Private modules and names are found at the top of a script and inside its functions."""
    (tmp_path / "a.py").write_text(
        "from flysearch.compare import RESULTS_DB\n"
        "from flysearch.samplers import _history as h\n"
        "import flysearch.evaluators._pool\n"
        "def f():\n"
        "    from flysearch.kernels._aiter_cut import space_cuts\n"
        "    from flysearch.compare import _fmt_csv\n"
        "    from flysearch.__main__ import main\n"
    )
    assert _private_imports({"a.py": tmp_path / "a.py"}) == [
        "a.py imports _fmt_csv from flysearch.compare",
        "a.py imports _history from flysearch.samplers",
        "a.py imports the private module flysearch.evaluators._pool",
        "a.py imports the private module flysearch.kernels._aiter_cut",
    ]


# -- the order of the stages --------------------------------------------------------------------


def _layers(architecture: str) -> list[str]:
    """The modules and packages of the flow, top-down, as the first code block of
    ``docs/architecture.md`` lists them: ``errors.py`` is ``flysearch.errors``, ``space/`` is
    ``flysearch.space``, ``__init__.py`` the package ``flysearch`` itself."""
    block = re.search(r"```\n(.*?)```", architecture, re.DOTALL)
    assert block, "docs/architecture.md lists the stages in a code block"
    names = [line.split()[0] for line in block.group(1).splitlines() if line.strip()]
    return [".".join(["flysearch", *[part for part in [n.removesuffix("/").removesuffix(".py")]
                                     if part != "__init__"]]) for n in names]


def _layer(module: str, layers: list[str]) -> int | None:
    """The position of *module* in *layers* (that of the package it is in); ``None`` if unplaced."""
    if module in layers:
        return layers.index(module)
    placed = [i for i, entry in enumerate(layers) if entry != "flysearch" and module.startswith(f"{entry}.")]
    return max(placed, key=lambda i: len(layers[i])) if placed else None


def _against_the_flow(edges: list[tuple[str, str]], layers: list[str]) -> list[str]:
    """Each import ``(importer, imported)`` of a module placed below the importer in *layers*."""
    found = []
    for importer, imported in edges:
        a, b = _layer(importer, layers), _layer(imported, layers)
        if a is not None and b is not None and b > a:
            found.append(f"{importer} imports {imported} ({layers[b]} comes after {layers[a]})")
    return sorted(set(found))


def test_a_stage_imports_only_the_stages_above_it() -> None:
    """Arrows go down the flow of ``docs/architecture.md``: a module imports the modules of its own
    stage and of the stages listed above it, never of one below, and every module has a place."""
    modules = _modules()
    layers = _layers(ARCHITECTURE.read_text())
    assert layers.index("flysearch.space") < layers.index("flysearch.study") < layers.index("flysearch.cli")
    unplaced = sorted(m for m in modules if _layer(m, layers) is None)
    assert not unplaced, f"docs/architecture.md's list of stages does not place {unplaced}"
    edges = [(importer, imported) for importer, imported, _name in _imports(modules)
             if imported in modules and imported != importer]
    found = _against_the_flow(edges, layers)
    assert not found, "\n".join(found)


def test_the_order_check_sees_an_import_up_the_flow() -> None:
    layers = _layers("text\n```\nerrors.py    mistakes\n_version.py\nspace/   Space ──┐\n"
                     "study/   Study ───┘\n__init__.py\n```\n")
    assert layers == ["flysearch.errors", "flysearch._version", "flysearch.space", "flysearch.study",
                      "flysearch"]
    edges = [("flysearch.space._space", "flysearch.study"), ("flysearch.study._loop", "flysearch.space"),
             ("flysearch.study._loop", "flysearch.study._trials"), ("flysearch.errors", "flysearch._version"),
             ("flysearch", "flysearch.study"), ("flysearch.space", "flysearch")]
    assert _against_the_flow(edges, layers) == [
        "flysearch.errors imports flysearch._version (flysearch._version comes after flysearch.errors)",
        "flysearch.space imports flysearch (flysearch comes after flysearch.space)",
        "flysearch.space._space imports flysearch.study (flysearch.study comes after flysearch.space)",
    ]
