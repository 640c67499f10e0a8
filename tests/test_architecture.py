"""The package's import graph, read with ``ast``: no import cycles, no import against the order of
the stages that ``docs/architecture.md`` lists, and no module takes another module's private names
(nor a private module of another package); the lab (``lab/``: the benchmark scripts, the paper's
build, their tests) imports flysearch's public names only; and only ``flysearch/_optuna.py``
touches Optuna's private names.

Every import counts, inside functions and under ``if TYPE_CHECKING:`` too: a cycle closed at call
time, or by a type annotation, is still a cycle in the design.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "flysearch"
SCRIPTS = (ROOT / "lab",)  # benchmarks, paper, their tests: thin callers of the public API
ARCHITECTURE = ROOT / "docs" / "architecture.md"
OPTUNA_ADAPTER = "flysearch._optuna"  # the one module that may use Optuna's private names


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


# -- Optuna's private names ---------------------------------------------------------------------


def _self_stores(tree: ast.AST) -> set[str]:
    """The private attributes set on ``self`` in *tree*."""
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name) and n.value.id == "self" and _private(n.attr)}


# What Optuna's source sets on ``self`` or defines indented (methods and class attributes), privately.
_OPTUNA_DEFINES = re.compile(
    r"self\.(_[A-Za-z]\w*)\s*(?::[^=\n]*)?=(?!=)"
    r"|^[ \t]+def[ \t]+(_[A-Za-z]\w*)|^[ \t]+(_[A-Za-z]\w*)[ \t]*[:=]", re.MULTILINE)


@functools.cache
def _optuna_private_names() -> frozenset[str]:
    """Every private attribute and method of Optuna's classes (and a few private names of its
    functions), read from the installed Optuna's source."""
    import optuna

    return frozenset(next(name for name in found if name)
                     for path in Path(optuna.__file__).parent.rglob("*.py")
                     for found in _OPTUNA_DEFINES.findall(path.read_text(encoding="utf-8")))


@functools.cache
def _optuna_tables() -> frozenset[str]:
    """The tables of Optuna's RDB storage."""
    from optuna.storages._rdb import models

    return frozenset(models.BaseModel.metadata.tables)


_SQL_WRITE = re.compile(
    r"\b(?:insert\s+(?:or\s+\w+\s+)?into|delete\s+from|(?:alter|drop)\s+table\s+(?:if\s+exists\s+)?"
    r"|create\s+(?:unique\s+)?index\s+(?:if\s+not\s+exists\s+)?\w+\s+on)\s+(\w+)"
    r"|\bupdate\s+(\w+)\s+set\b", re.IGNORECASE)


@functools.cache
def _private_names_of(cls: type) -> frozenset[str]:
    """The private names of Optuna's class *cls* (or the adapter's) and its bases: what they define
    and what they set on ``self``."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] == "optuna" or klass.__module__ == OPTUNA_ADAPTER:
            names |= {n for n in vars(klass) if _private(n)}
            names |= _self_stores(ast.parse(inspect.getsource(klass)))
    return frozenset(names)


def _load(dotted: str) -> object:
    """The object a dotted name of Optuna's or the adapter's names."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(dotted)


class _OptunaUses:
    """Where the modules given touch Optuna's private names (see :meth:`find`)."""

    def __init__(self, modules: dict[str, Path]) -> None:
        self.trees = {m: _parse(p) for m, p in modules.items()}
        self.aliases = {m: self._aliases(m, modules[m], tree) for m, tree in self.trees.items()}
        self.classes = {f"{m}.{node.name}": (m, node) for m, tree in self.trees.items()
                        for node in tree.body if isinstance(node, ast.ClassDef)}

    @staticmethod
    def _aliases(module: str, path: Path, tree: ast.Module) -> dict[str, str]:
        """Each name the module binds by an import -> the dotted name it stands for."""
        out = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    out[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, path.name == "__init__.py", node)
                for alias in node.names:
                    out[alias.asname or alias.name] = f"{target}.{alias.name}"
        return out

    def dotted(self, module: str, node: ast.expr) -> str | None:
        """The dotted name a ``Name`` or attribute chain in *module* stands for (``None`` for other
        expressions)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.aliases[module].get(node.id, f"{module}.{node.id}")
        return ".".join([head, *reversed(parts)])

    def _class(self, dotted: str) -> str | None:
        """The class of the modules given that *dotted* names, through their imports."""
        for _ in range(10):
            if dotted in self.classes:
                return dotted
            module, _, name = dotted.rpartition(".")
            if module not in self.aliases or name not in self.aliases[module]:
                return None
            dotted = self.aliases[module][name]
        return None

    def optuna_bases(self, qualname: str) -> list[type]:
        """The classes of Optuna's (or the adapter's) that the class *qualname* derives from."""
        module, node = self.classes[qualname]
        out: list[type] = []
        for base in node.bases:
            dotted = self.dotted(module, base)
            if dotted is None:
                continue
            if dotted.startswith(("optuna.", f"{OPTUNA_ADAPTER}.")):
                cls = _load(dotted)
                if isinstance(cls, type):
                    out.append(cls)
            elif (local := self._class(dotted)) is not None and local != qualname:
                out += self.optuna_bases(local)
        return out

    def find(self, skip: str = OPTUNA_ADAPTER) -> list[str]:
        """``module:line name`` for each use of a private name of Optuna's by a module but *skip*:
        an import of a private module or name, an attribute of an object that Optuna's classes name
        privately (``study._storage``, ``getattr(storage, "_backend")``), and in a class derived from
        one of Optuna's, an override, use or shadowing of a private name of its Optuna bases; and SQL
        that writes one of Optuna's tables by name."""
        every = _optuna_private_names()
        found: list[tuple[str, int, str]] = []
        for module, tree in self.trees.items():
            if module == skip:
                continue
            own: dict[int, frozenset[str]] = {}  # id of a node in a derived class -> its bases' names
            for qualname, (m, cls) in self.classes.items():
                if m == module and (bases := self.optuna_bases(qualname)):
                    names = frozenset().union(*(_private_names_of(b) for b in bases))
                    found += [(module, item.lineno, item.name) for item in cls.body
                              if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                              and item.name in names]
                    own |= {id(n): names for n in ast.walk(cls)}
            for node in ast.walk(tree):
                name = self._use(module, node, every, own.get(id(node), frozenset()))
                if name:
                    found.append((module, node.lineno, name))
        return [f"{module}:{line} {name}" for module, line, name in sorted(set(found))]

    def _use(self, module: str, node: ast.AST, every: frozenset[str], bases: frozenset[str]) -> str | None:
        """The private name of Optuna's that *node* uses, if any."""
        if isinstance(node, ast.Import):
            hits = [a.name for a in node.names if a.name.split(".")[0] == "optuna"
                    and any(_private(p) for p in a.name.split("."))]
            return ", ".join(hits) or None
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("optuna"):
            if any(_private(p) for p in (node.module or "").split(".")):
                return node.module
            return ", ".join(a.name for a in node.names if _private(a.name)) or None
        if isinstance(node, ast.Attribute) and _private(node.attr):
            receiver = node.value
            if (isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")) or (
                    isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name)
                    and receiver.func.id == "super"):
                return node.attr if node.attr in bases else None
            dotted = self.dotted(module, receiver) or ""
            return node.attr if node.attr in every or dotted.split(".")[0] == "optuna" else None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and node.args[1].value in every):
            return str(node.args[1].value)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            written = [a or b for a, b in _SQL_WRITE.findall(node.value)]
            return ", ".join(f"writes {t}" for t in written if t.lower() in _optuna_tables()) or None
        return None


def test_only_the_adapter_touches_optunas_private_names() -> None:
    """Optuna's private names change without notice; ``flysearch/_optuna.py`` uses each one under a
    public name, and ``tests/test_optuna_contract.py`` holds them to the installed Optuna."""
    uses = _OptunaUses(_modules()).find(skip="")
    found = [use for use in uses if not use.startswith(f"{OPTUNA_ADAPTER}:")]
    assert not found, "use flysearch._optuna instead:\n" + "\n".join(found)
    assert len(uses) > 10  # the check sees the adapter's own


def test_the_optuna_check_sees_private_names(tmp_path: Path) -> None:
    """Imports, attributes of Optuna's objects, in a subclass of an Optuna class overrides, uses and
    shadowing of its private names, and SQL writes to Optuna's tables; a class of flysearch's own
    keeps its private names, and SQL writes to other tables are not Optuna's."""
    (tmp_path / "flysearch").mkdir()
    (tmp_path / "flysearch" / "a.py").write_text(
        "import optuna\n"
        "from optuna.storages._rdb import models\n"
        "from optuna.samplers import TPESampler as T\n"
        "class S(T):\n"
        "    def __init__(self):\n"
        "        self._mine = 1\n"
        "        self._rng = None\n"
        "    def _get_params(self, trial, study):\n"
        "        return super()._get_params(trial, study)\n"
        "class Plain:\n"
        "    def __init__(self):\n"
        "        self._rng = 0\n"
        "    def _get_params(self):\n"
        "        return self._rng\n"
        "def f(study, trial):\n"
        "    study._storage.set_trial_system_attr(trial._trial_id, 'k', 1)\n"
        "    return getattr(study, '_study_id'), optuna.study._tell\n"
        "def g(conn, table):\n"
        "    conn.execute('delete from flysearch_meta where 1; DELETE FROM trials WHERE study_id = ?')\n"
        "    conn.execute(f'update {table} set x = 1; UPDATE studies SET study_name = 1')\n"
    )
    (tmp_path / "flysearch" / "b.py").write_text(
        "from flysearch.a import S\n"
        "class U(S):\n"
        "    def _compute_acquisition_func(self, samples, below, above):\n"
        "        return self._mine, self._n_ei_candidates\n"
    )
    modules = {_module_name(p, tmp_path / "flysearch"): p for p in (tmp_path / "flysearch").glob("*.py")}
    assert _OptunaUses(modules).find() == [
        "flysearch.a:2 optuna.storages._rdb",
        "flysearch.a:7 _rng",
        "flysearch.a:8 _get_params",
        "flysearch.a:9 _get_params",
        "flysearch.a:16 _storage",
        "flysearch.a:16 _trial_id",
        "flysearch.a:17 _study_id",
        "flysearch.a:17 _tell",
        "flysearch.a:19 writes trials",
        "flysearch.a:20 writes studies",
        "flysearch.b:3 _compute_acquisition_func",
        "flysearch.b:4 _n_ei_candidates",
    ]


# -- no module for the lab alone ----------------------------------------------------------------

# Where the product starts: the package (what ``import flysearch`` runs), ``python -m flysearch`` and
# the console script (``pyproject.toml``'s ``flysearch = "flysearch.cli:main"``).
PRODUCT_ROOTS = ("flysearch", "flysearch.__main__", "flysearch.cli")
USERS = (ROOT / "examples",)  # a user's own code: its imports are uses of the product


def _reexports(modules: dict[str, Path]) -> dict[tuple[str, str], tuple[str, str]]:
    """``(package, name) -> (module, its name there)`` for each name a package's ``__init__`` takes
    from one of its modules: imported (under ``if TYPE_CHECKING:`` too) or named in a map of names
    imported on first use (``{"name": "_module"}``, ``{"Name": "compare"}``)."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for package, path in modules.items():
        if path.name != "__init__.py":
            continue
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(package, True, node)
                for alias in node.names:
                    if target in modules and f"{target}.{alias.name}" not in modules:
                        out[(package, alias.asname or alias.name)] = (target, alias.name)
            elif isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values, strict=True):
                    if (isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                            and isinstance(k.value, str) and isinstance(v.value, str)
                            and f"{package}.{v.value}" in modules):
                        out.setdefault((package, k.value), (f"{package}.{v.value}", k.value))
    return out


def _home(module: str, name: str | None, reexports: dict[tuple[str, str], tuple[str, str]]) -> str:
    """The module that defines what ``from module import name`` imports (through the re-exports)."""
    for _ in range(10):
        if name is None or (module, name) not in reexports:
            break
        module, name = reexports[(module, name)]
    return module


def _documented_packages(docs: Path) -> set[str]:
    """The packages whose public names the API pages render (``::: flysearch.tune``)."""
    return {m.group(1) for page in sorted(docs.rglob("*.md"))
            for m in re.finditer(r"^:::\s*(flysearch[\w.]*)", page.read_text(), re.MULTILINE)}


def _research_only(modules: dict[str, Path], outside: dict[str, Path], documented: set[str]) -> list[str]:
    """Each module of the package that the product does not use, with who imports it.

    *outside* maps a label (``lab/benchmarks/x.py``, ``examples/y.py``) to a file outside the
    package. A module is part of the product when it is reached from :data:`PRODUCT_ROOTS`, from a
    package the docs render (*documented*) or from a user's code (a label in :data:`USERS`) through
    imports, each import counted at the module
    that defines the name (a package's re-export is followed to its home), or by its dotted name
    in a string (``importlib.import_module``). A package's ``__init__`` taking names from its own
    modules is not a use of them, unless the docs render that package (*documented*)."""
    reexports = _reexports(modules)
    edges: dict[str, set[str]] = {label: set() for label in [*modules, *outside]}
    for importer, imported, name in _imports({**modules, **outside}):
        home = _home(imported, name, reexports)
        if home not in modules or home == importer:
            continue
        own = (importer in modules and modules[importer].name == "__init__.py"
               and home.startswith(f"{importer}."))
        if own and importer not in documented:
            continue
        edges[importer] |= {home, imported if imported in modules else home}  # and the __init__ it runs
    for (package, _name), (home, _) in reexports.items():
        if package in documented:
            edges[package].add(home)
    for module, path in modules.items():
        edges[module] |= {n.value for n in ast.walk(_parse(path))
                          if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in modules}
    users = [label for label in outside if any(Path(label).parts[0] == u.name for u in USERS)]
    reached: set[str] = set()
    stack = [r for r in (*PRODUCT_ROOTS, *sorted(documented)) if r in modules] + users
    while stack:
        node = stack.pop()
        if node in reached:
            continue
        reached.add(node)
        parts = node.split(".")
        stack += [".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in modules]
        stack += sorted(edges.get(node, ()))
    found = []
    for module in sorted(set(modules) - reached):
        by = sorted(label for label in outside if module in edges[label])
        lab = [label for label in by if label.startswith("lab/")]
        if lab:
            found.append(f"{module} is imported only from the lab ({', '.join(lab[:3])}): move it into lab/")
        else:
            found.append(f"{module} is used by no part of the product ({', '.join(by[:3]) or 'nothing'} "
                         "imports it): delete it, or move it beside its only user")
    return found


def _outside_files() -> dict[str, Path]:
    """Every Python file of the repository outside the package, by its path from the root."""
    return {str(p.relative_to(ROOT)): p for folder in ("examples", "lab", "tests", "docs", "studies")
            if (ROOT / folder).is_dir() for p in sorted((ROOT / folder).rglob("*.py"))}


def test_every_module_serves_the_product() -> None:
    """No module of the package is there for the lab alone (or for nothing but its tests): research
    code that only a benchmark, the paper or a rejected variant uses lives in ``lab/``."""
    found = _research_only(_modules(), _outside_files(), _documented_packages(ROOT / "docs"))
    assert not found, "\n".join(found)


def test_the_product_check_sees_a_module_for_the_lab_alone(tmp_path: Path) -> None:
    """A module reached only through its package's re-export by a lab script is the lab's; one that
    the CLI uses, one named by a string (a registry's import) and one a documented package
    re-exports are the product's; a module only a test imports is used by nothing."""
    package = tmp_path / "flysearch"
    (package / "cli").mkdir(parents=True)
    (package / "pkg").mkdir()
    (package / "tune").mkdir()
    (package / "__init__.py").write_text("")
    (package / "cli" / "__init__.py").write_text("from flysearch.pkg import used\n")
    (package / "pkg" / "__init__.py").write_text(
        "from flysearch.pkg._used import used\nfrom flysearch.pkg._lab import lab as for_lab\n"
        "from flysearch.pkg._tested import tested\n"
        "_BUILTIN = ('flysearch.pkg._registered',)\n")
    for name in ("_used", "_lab", "_tested", "_registered"):
        (package / "pkg" / f"{name}.py").write_text(f"def {name.lstrip('_')}(): pass\n")
    (package / "tune" / "__init__.py").write_text("__getattr__ = lazy_names(__name__, {'tune': '_doc'})\n")
    (package / "tune" / "_doc.py").write_text("def tune(): pass\n")
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "a.py").write_text(
        "from flysearch.pkg import for_lab, used\nfrom flysearch.tune import tune\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("def test():\n    from flysearch.pkg import tested\n")
    modules = {_module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    outside = {"lab/a.py": tmp_path / "lab" / "a.py", "tests/t.py": tmp_path / "tests" / "t.py"}
    assert _research_only(modules, outside, {"flysearch.tune"}) == [
        "flysearch.pkg._lab is imported only from the lab (lab/a.py): move it into lab/",
        "flysearch.pkg._tested is used by no part of the product (tests/t.py imports it): delete it, "
        "or move it beside its only user",
    ]
    assert "flysearch.tune._doc is imported only from the lab (lab/a.py): move it into lab/" in \
        _research_only(modules, outside, set())
