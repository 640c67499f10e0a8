"""Hostile names through every importer and exporter: do the files flysearch writes hold data only?

Issue 72 ("an export runs code"): a table named ``x\\n__import__("os").system(...)`` once became a
line of code in ``flysearch export triton``'s Python file. This script feeds N seeded random hostile
strings (line breaks, quotes, triple quotes, backslashes, ``#``, payloads, NUL, bidi overrides, lone
surrogates, 10 kB strings, random code points) into every place a name or value enters:

* the importers, through :func:`flysearch.tables.import_tables`: a flysearch table file whose device
  is the string, imported under the string as ``--name``; the Kernel Tuner cache written below
  (kernel, device and parameter names); an aiter tuned CSV whose dtypes and a non-FlyDSL row's
  kernel name are the string. Each input is refused (a :class:`~flysearch.errors.FlysearchError`)
  or stored; a stored table is exported again (Triton source and JSON, Kernel Tuner cache);
* the exporters, given tables that hold the string whatever an importer would say (a database
  written before names were checked, or tables built in Python): the Triton source and JSON
  (table, kernel, parameter names and values, backend names), the Kernel Tuner cache, the aiter
  tuned CSV (dtypes), aiter's Triton config JSON (table name, device, ``cache_modifier``) and
  the FlyDSL artifact (device name, a key field).

Each file written is checked: a Python file must parse, be the exporter's fixed scaffold (a
docstring, ``import triton``, ``CONFIGS... = [triton.Config(<literal>, <option>=<literal>), ...]``),
its literals must be the exported values, and running it (all of them in one subprocess, stdout and
stderr captured at the descriptor) must print nothing and define only ``triton`` and its lists; a
JSON file must parse as strict JSON and hold the string unchanged; a CSV must parse back into the
cells written. Base data: the committed H200 tables ``lab/benchmarks/data/h200/triton_gemm__H200__
1x6144x4096`` and ``lab/benchmarks/data/h200_aiter_triton/aiter_triton_gemm__H200__1x6144x4096`` (their
fastest rows) and the FlyDSL row of aiter's shipped tuned CSV (``flysearch.export``'s example).
Run from the repository root::

    python lab/benchmarks/export_fuzz.py --n 2000 --seed 0 --out lab/benchmarks/results/export_fuzz.md
"""

from __future__ import annotations

import argparse
import ast
import csv
import datetime as dt
import json
import os
import platform
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "lab" / "benchmarks"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from flysearch.compare import code_commit, host_description  # noqa: E402
from flysearch.errors import FlysearchError  # noqa: E402
from flysearch.export import (  # noqa: E402
    aiter_triton_buckets,
    best_configs,
    export_flydsl_artifacts,
    export_json,
    export_triton,
    export_tuned_csv,
    triton_configs_source,
    write_aiter_triton,
    write_kernel_tuner_cache,
)
from flysearch.kernels import import_aiter_module  # noqa: E402
from flysearch.tables import (  # noqa: E402
    TUNED_HEADER,
    GroundTruth,
    TableStore,
    dump_table_file,
    import_tables,
    opened_store,
    read_table_file,
    read_tables,
)

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

TRITON_TABLE = BENCHMARKS / "data" / "h200" / "triton_gemm__H200__1x6144x4096.table.json.gz"
AITER_TRITON_TABLE = (BENCHMARKS / "data" / "h200_aiter_triton"
                      / "aiter_triton_gemm__H200__1x6144x4096.table.json.gz")
FLYDSL_KERNEL = ("flydsl_gemm5_abf16_wbf16_bf16_t16x64x128_split_k2_block_m_warp1_block_n_warp2"
                 "_block_k_warp1_async_copyTrue_b_to_ldsTrue_b_preshuffleFalse_c_to_ldsFalse_gfx950")
AITER_ROW = ["gfx950", "256", "1", "6144", "2048", "False", "torch.bfloat16", "torch.bfloat16", "False",
             "False", "flydsl", "3161", "2", "10.8611", FLYDSL_KERNEL, "0.0438", "2.32", "2318.57"]
ROWS = 4  # fastest rows kept of each base table: the exports read the best one or two

PAYLOAD = '__import__("os").system("echo PWNED")'
PIECES: tuple[str, ...] = (
    "\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\x00", "\x1b[2J", "\t",
    "'", '"', "'''", '"""', "\\", "\\n", "\\x00", "#", "# -*- coding: latin-1 -*-", ",", ";", "=1+1",
    "{", "}", "[", "]", "(", ")", "{0}", "%s", "${x}", "</script>", "*/", "--", "@SUM(A1)",
    PAYLOAD, f"x\n{PAYLOAD}, #", f'"), {PAYLOAD}, ("', f"'}}, {PAYLOAD}, {{'", f'"""\n{PAYLOAD}\n"""',
    f"\\\n{PAYLOAD}", f"\r{PAYLOAD}", f"\u2028{PAYLOAD}", "NaN", "Infinity", "null", "None", "True",
    "\u202e", "\u2066", "\u2069", "\u200b", "\ufeff", "\ud800", "\udfff", "\ud83d", "\U0001f600",
    "\u0301", "\uff03", "\u00a0", "\ufffe", "\U0010ffff", "\ue000", "\u0627\u0644\u0639", "\u4e2d\u6587",
    "triton_gemm", "CONFIGS", "gfx942", "torch.bfloat16",
)
RANGES = ((0x00, 0x20), (0x20, 0x7F), (0x7F, 0xA0), (0xA0, 0x2FF), (0x2000, 0x206F), (0xD800, 0xE000),
          (0xE000, 0xF8FF), (0xFE00, 0xFFFF), (0x10000, 0x10FFFF))
KB10 = 10_000


def hostile_strings(n: int, seed: int) -> list[str]:
    """*n* hostile strings, reproducible from *seed*: one to four :data:`PIECES` and random code
    points (from :data:`RANGES`: controls, bidi, surrogates, private use, astral), about one in
    twenty padded to 10 kB; every other string keeps only printable characters (what an importer
    lets through), so that the stored route is exercised too."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        parts = rng.sample(PIECES, rng.randint(1, 4))
        for _ in range(rng.randint(0, 6)):
            low, high = rng.choice(RANGES)
            parts.insert(rng.randint(0, len(parts)), chr(rng.randrange(low, high)))
        text = "".join(parts)
        if rng.random() < 0.05:
            text = (text + "A" * KB10)[:KB10] if rng.random() < 0.5 else "B" * (KB10 - len(text)) + text
        if i % 2:
            text = "".join(ch for ch in text if ch.isprintable()) or "#"
        out.append(text)
    return out


# -- what a file must be ---------------------------------------------------------------------------

OK, REFUSED, CODE, UNPARSED, ALTERED, CRASHED = ("data only", "refused", "executes code",
                                                 "fails to parse", "data altered", "crashed")
_LAUNCH = {"num_warps", "num_stages", "num_ctas", "maxnreg"}


def python_verdict(source: str) -> tuple[str, str, dict[str, list[Any]]]:
    """``(verdict, why, lists)`` of a Triton export: :data:`UNPARSED` when it does not parse,
    :data:`CODE` when it is not the exporter's scaffold (a docstring, ``import triton``, then
    ``NAME = [triton.Config(<literal>, <launch option>=<literal>, ...), ...]`` only), else
    :data:`OK` with each list's configs as ``(kwargs, options)`` read back from the literals."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        return UNPARSED, f"{type(exc).__name__}: {exc}", {}
    body = tree.body
    if (len(body) < 3 or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Constant)
            or not isinstance(body[0].value.value, str)):
        return CODE, "no docstring first", {}
    imported = [(a.name, a.asname) for a in body[1].names] if isinstance(body[1], ast.Import) else []
    if imported != [("triton", None)]:
        return CODE, "the second statement is not 'import triton'", {}
    lists: dict[str, list[Any]] = {}
    for stmt in body[2:]:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.List)):
            return CODE, f"line {stmt.lineno}: {type(stmt).__name__} is no 'NAME = [...]'", {}
        configs = []
        for call in stmt.value.elts:
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "Config" and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "triton" and len(call.args) == 1
                    and all(k.arg in _LAUNCH for k in call.keywords)):
                return CODE, f"line {getattr(call, 'lineno', '?')}: no triton.Config(kwargs, options)", {}
            try:
                configs.append((ast.literal_eval(call.args[0]),  # ValueError on anything but a literal
                                {k.arg: ast.literal_eval(k.value) for k in call.keywords}))
            except (ValueError, TypeError, SyntaxError) as exc:
                return CODE, f"line {call.lineno}: not a literal ({exc})", {}
        lists[stmt.targets[0].id] = configs
    return OK, "", lists


def as_json_reads(value: Any) -> Any:
    """*value* as JSON gives it back: the same, except that a high surrogate followed by a low one
    (two code points in a Python string) is the one character their escapes stand for in JSON."""
    return json.loads(json.dumps(value))


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is no JSON number")


def json_load(text: str) -> Any:
    """*text* as strict JSON (``NaN`` and ``Infinity`` refused); raises ValueError."""
    return json.loads(text, parse_constant=_no_constant)


# -- running the Python files ----------------------------------------------------------------------

_RUNNER = r"""
import json, os, runpy, sys, tempfile
results = {}
for path in sys.argv[2:]:
    with tempfile.TemporaryFile() as cap:
        sys.stdout.flush(); sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(cap.fileno(), 1); os.dup2(cap.fileno(), 2)
        try:
            ns = runpy.run_path(path, run_name="exported")
            names = sorted(k for k in ns if not k.startswith("__"))
            import triton
            bad = [k for k in names if k != "triton" and not (isinstance(ns[k], list)
                   and all(isinstance(c, triton.Config) for c in ns[k]))]
            error = f"not lists of triton.Config: {bad}" if bad else ""
        except BaseException as exc:
            names, error = [], f"{type(exc).__name__}: {exc}"
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved[0], 1); os.dup2(saved[1], 2)
            os.close(saved[0]); os.close(saved[1])
        cap.seek(0)
        printed = cap.read().decode("utf-8", "replace")
    results[path] = {"names": names, "printed": printed, "error": error}
with open(sys.argv[1], "w") as fh:
    json.dump(results, fh)
"""


def run_python_files(paths: list[Path], expected: dict[Path, set[str]]) -> dict[Path, str]:
    """Run each file as a module in one fresh interpreter (``python -I``: no site of this checkout;
    triton from the environment), its stdout and stderr captured at the descriptor; the reason for
    each file that printed anything, failed, or defined other names than ``triton`` and *expected*."""
    if not paths:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "ran.json"
        proc = subprocess.run([sys.executable, "-I", "-c", _RUNNER, str(report), *map(str, paths)],
                              capture_output=True, text=True, timeout=600, cwd=tmp)
        if proc.returncode != 0 or proc.stdout or not report.exists():
            why = f"runner failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-300:]}"
            return dict.fromkeys(paths, why)
        ran = json.loads(report.read_text())
    bad = {}
    for path in paths:
        got = ran[str(path)]
        want = sorted({"triton", *expected[path]})
        if got["printed"] or got["error"] or got["names"] != want:
            bad[path] = f"printed {got['printed'][:80]!r}, error {got['error'][:80]!r}, names {got['names']}"
    return bad


# -- the base data ---------------------------------------------------------------------------------


@dataclass
class Base:
    """The real tables every input is planted in, and where this run writes."""

    folder: Path
    triton: GroundTruth
    entries: list[dict[str, Any]]
    aiter_triton: GroundTruth | None
    aiter_csv: Path

    @classmethod
    def load(cls, folder: Path) -> Base:
        meta, rows = read_table_file(TRITON_TABLE)
        fastest = sorted((r for r in rows if r.ok), key=lambda r: r.time_ms)[:ROWS]
        triton = GroundTruth(meta, {r.key: r for r in fastest})
        store = TableStore(":memory:")
        store.write(meta, fastest)
        entries = best_configs(store, top=2)
        store.close()
        aiter_csv = folder / "base_tuned.csv"
        with aiter_csv.open("w", newline="") as fh:
            csv.writer(fh, lineterminator="\n").writerows([TUNED_HEADER, AITER_ROW])
        return cls(folder, triton, entries, _aiter_triton_base(), aiter_csv)


def _aiter_triton_base() -> GroundTruth | None:
    """The fastest rows of the H200 aiter Triton table as a gfx942 table (with the AMD keys aiter's
    files need), or ``None`` when aiter's Triton code cannot be imported here."""
    meta, rows = read_table_file(AITER_TRITON_TABLE)
    amd = {"waves_per_eu": 2, "matrix_instr_nonkdim": 16, "cache_modifier": ""}
    fastest = [replace(r, params={**r.params, **amd})
               for r in sorted((r for r in rows if r.ok), key=lambda r: r.time_ms)[:ROWS]]
    aiter_triton_buckets({1: fastest[0].params})  # the configs are aiter's
    try:
        import_aiter_module("ops.triton.utils._triton.arch_info")
    except (FlysearchError, ImportError):
        return None
    meta = replace(meta, arch="gfx942", device="AMD Instinct MI300X")
    return GroundTruth(meta, {r.key: r for r in fastest})


# -- one input through everything ------------------------------------------------------------------


@dataclass
class Verdicts:
    """The verdict of each stage for each input, and the Python files to run."""

    counts: dict[str, Counter[str]]
    examples: dict[tuple[str, str], str]
    python: dict[Path, tuple[str, set[str]]]

    def add(self, stage: str, verdict: str, why: str = "") -> None:
        self.counts.setdefault(stage, Counter())[verdict] += 1
        if verdict not in (OK, REFUSED):
            self.examples.setdefault((stage, verdict), why[:300])


def _attempt(verdicts: Verdicts, stage: str, make: Callable[[], Any]) -> Any:
    """Run *make*; a FlysearchError is the stage refusing, anything else a crash. ``None`` then."""
    try:
        return make()
    except FlysearchError:
        verdicts.add(stage, REFUSED)
    except Exception as exc:
        verdicts.add(stage, CRASHED, f"{type(exc).__name__}: {exc}")
    return None


def _check_json(verdicts: Verdicts, stage: str, path: Path, held: Callable[[Any], bool]) -> None:
    try:
        doc = json_load(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        verdicts.add(stage, UNPARSED, str(exc))
        return
    verdicts.add(stage, OK if held(doc) else ALTERED, "" if held(doc) else f"{path.name}: string not held")


def _check_python(verdicts: Verdicts, stage: str, path: Path, kwargs: dict[str, Any]) -> None:
    """Parse and check a Triton export now; queue it to be run (:func:`run_python_files`)."""
    verdict, why, lists = python_verdict(path.read_text(encoding="utf-8"))
    if verdict == OK and not any(k == kwargs for configs in lists.values() for k, _ in configs):
        verdict, why = ALTERED, "the exported kwargs are not in the file"
    if verdict != OK:
        verdicts.add(stage, verdict, why)
        return
    verdicts.python[path] = (stage, set(lists))


def _written(verdicts: Verdicts, stage: str, path: Path, text: str) -> bool:
    """Write *text* as the exporter's own writer would (UTF-8); a text that UTF-8 cannot hold (a lone
    surrogate) is a file that cannot be written, counted as one that does not parse."""
    try:
        path.write_text(text, encoding="utf-8")
    except UnicodeEncodeError as exc:
        verdicts.add(stage, UNPARSED, f"not UTF-8: {exc}")
        return False
    return True


def _kwargs(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in _LAUNCH}


def fuzz_one(text: str, i: int, base: Base, verdicts: Verdicts) -> None:
    """Plant *text* everywhere a name or value enters, export, and check each file written."""
    out = base.folder / f"in{i}"
    out.mkdir()
    hostile_params = {**base.entries[0]["params"], text: text, "BLOCK_M": text}
    read = as_json_reads(text)

    # Importers: a table file with the string as --name and device; then exported from the database.
    db = out / "t.db"
    file = out / "t.table.json.gz"
    dump_table_file(GroundTruth(replace(base.triton.meta, device=text), base.triton.rows), file)
    stored = _attempt(verdicts, "import: table file (--name, device)",
                      lambda: import_tables([file], db=db, name=text))
    if stored is not None:
        verdicts.add("import: table file (--name, device)", OK)
        py, js = base.folder / "py" / f"{i}-stored.py", out / "stored.json"
        if _attempt(verdicts, "export triton (stored table)",
                    lambda: export_triton(db, out=py, json_out=js)) is not None:
            _check_python(verdicts, "export triton (stored table)", py, _kwargs(base.entries[0]["params"]))
            _check_json(verdicts, "export triton JSON (stored table)", js,
                        lambda d: d["configs"][0]["table"] == d["configs"][0]["device"] == read)

    # Exporters, from tables that hold the string whatever an importer says.
    entries = [{**base.entries[0], "table": text, "params": hostile_params, "fastest_backend": text,
                "backend_ratios": {text: 1.0}},
               {**base.entries[1], "table": text + "2", "kernel": text}]
    py = base.folder / "py" / f"{i}.py"
    source = _attempt(verdicts, "export triton", lambda: triton_configs_source(entries))
    if source is not None and _written(verdicts, "export triton", py, source):
        _check_python(verdicts, "export triton", py, _kwargs(as_json_reads(hostile_params)))
    js = _attempt(verdicts, "export triton JSON", lambda: export_json(entries))
    if js is not None and _written(verdicts, "export triton JSON", out / "best.json", js):
        _check_json(verdicts, "export triton JSON", out / "best.json",
                    lambda d: d["configs"][0]["table"] == d["configs"][0]["params"][read] == read)

    params = [*base.triton.meta.space["params"], {"name": text, "values": [text]}]
    kt_meta = replace(base.triton.meta, name=text, kernel=text, device=text,
                      space={**base.triton.meta.space, "name": text, "params": params})
    kt_table = GroundTruth(kt_meta, {k: replace(r, params={**r.params, text: text})
                                     for k, r in base.triton.rows.items()})
    kt = out / "kt" / "cache.json"
    kt.parent.mkdir()
    if _attempt(verdicts, "export kernel-tuner", lambda: write_kernel_tuner_cache(kt_table, kt)) is not None:
        _check_json(verdicts, "export kernel-tuner", kt,
                    lambda d: d["kernel_name"] == d["device_name"] == read
                    and d["tune_params"][read] == [read])
        stage = "import: Kernel Tuner cache (kernel, device, parameter)"
        if _attempt(verdicts, stage, lambda: import_tables([kt], db=out / "kt.db")) is not None:
            verdicts.add(stage, OK)
            js2 = out / "kt.json"
            with opened_store(out / "kt.db") as store:
                table = store.load(store.names()[0])
            if _attempt(verdicts, "export kernel-tuner (stored table)",
                        lambda: write_kernel_tuner_cache(table, js2)) is not None:
                _check_json(verdicts, "export kernel-tuner (stored table)", js2,
                            lambda d: d["kernel_name"] == read and read in d["tune_params"])

    # aiter: a tuned CSV whose dtypes and a non-FlyDSL row's kernel name are the string (importer),
    # and a FlyDSL table whose dtypes are the string (exporter).
    hostile_csv = out / "tuned.csv"
    row = [*AITER_ROW[:6], text, text, *AITER_ROW[8:10], "asm", *AITER_ROW[11:14], text, *AITER_ROW[15:]]
    with hostile_csv.open("w", newline="", encoding="utf-8", errors="surrogatepass") as fh:
        csv.writer(fh, lineterminator="\n").writerows([TUNED_HEADER, row])
    stage = "import: aiter tuned CSV (dtypes, kernel name)"
    if _attempt(verdicts, stage, lambda: import_tables([hostile_csv], db=out / "a.db")) is not None:
        verdicts.add(stage, OK)
    (meta, rows), = read_tables(base.aiter_csv)
    dtypes = {"aiter_dtype": text, "aiter_outdtype": text}
    planted = GroundTruth(replace(meta, problem={**meta.problem, **dtypes}), {r.key: r for r in rows})
    csv_out = out / "aiter.csv"
    records = _attempt(verdicts, "export aiter CSV", lambda: export_tuned_csv([planted], csv_out))
    if records is not None:
        with csv_out.open(newline="", encoding="utf-8") as fh:
            cells = list(csv.reader(fh))
        want = [list(TUNED_HEADER), *(r.cells() for r in records)]
        verdicts.add("export aiter CSV", OK if cells == want and cells[1][6] == text else ALTERED,
                     f"read back {cells[1:]!r:.200}")

    fly_db = out / "f.db"
    with opened_store(fly_db) as store:
        store.write(replace(planted.meta, name="fuzz/flydsl", problem={**meta.problem, "tag": text}),
                    list(planted.rows.values()))
    done = _attempt(verdicts, "export flydsl", lambda: export_flydsl_artifacts(
        fly_db, ["fuzz/flydsl"], out / "fly", name="gemm", key="M,N,K,tag", device_name=text, arch="gfx950",
        cu=256))
    if done is not None:
        _check_json(verdicts, "export flydsl", done.written[0].path,
                    lambda d: d["identity"]["device"]["name"] == d["identity"]["key"]["tag"] == read)

    shutil.rmtree(out)  # its databases and files are checked; the Python files wait in py/


def aiter_triton_exports(texts: list[str], base: Base, verdicts: Verdicts, chunk: int = 100) -> None:
    """aiter's Triton config JSON of tables named by each string, whose best config's
    ``cache_modifier`` is the string: *chunk* inputs per :func:`~flysearch.export.write_aiter_triton`
    (each its own N, so its own file; the writer reads aiter's wheel record once per call), one at a
    time for a chunk that is refused."""
    assert base.aiter_triton is not None
    at, stage = base.aiter_triton, "export aiter-triton"
    best = at.ranked()[0]

    def planted(i: int, text: str) -> GroundTruth:
        rows = {**at.rows, best.key: replace(best, params={**best.params, "cache_modifier": text})}
        return GroundTruth(replace(at.meta, name=text, problem={**at.meta.problem, "N": 1024 + i}), rows)

    def check(written: Any, numbered: list[tuple[int, str]]) -> None:
        files = {f.N: f.path for f in written.written}
        for i, text in numbered:
            read = as_json_reads(text)
            _check_json(verdicts, stage, files[1024 + i],
                        lambda d, t=read: d["any"]["cache_modifier"] in (t, None))

    numbered = list(enumerate(texts))
    for start in range(0, len(numbered), chunk):
        part = numbered[start:start + chunk]
        folder = base.folder / f"at{start}"
        try:
            written = write_aiter_triton([planted(i, t) for i, t in part], folder)
        except FlysearchError:
            for i, text in part:
                one = _attempt(verdicts, stage,
                               lambda i=i, t=text, f=folder: write_aiter_triton([planted(i, t)], f))
                if one is not None:
                    check(one, [(i, text)])
        except Exception as exc:
            for _ in part:
                verdicts.add(stage, CRASHED, f"{type(exc).__name__}: {exc}")
        else:
            check(written, part)
        shutil.rmtree(folder, ignore_errors=True)


# -- the report ------------------------------------------------------------------------------------

COLUMNS = (OK, REFUSED, CODE, UNPARSED, ALTERED, CRASHED)
ORDER = ("import: table file (--name, device)", "import: Kernel Tuner cache (kernel, device, parameter)",
         "import: aiter tuned CSV (dtypes, kernel name)", "export triton (stored table)",
         "export triton JSON (stored table)", "export kernel-tuner (stored table)", "export triton",
         "export triton JSON", "export kernel-tuner", "export aiter CSV", "export aiter-triton",
         "export flydsl")


def run_texts(texts: list[str], folder: Path) -> tuple[Verdicts, float]:
    """Every string through every stage (:func:`fuzz_one`, :func:`aiter_triton_exports`), writing
    under *folder*, then the Python files run; the verdicts and the seconds it took."""
    start = time.perf_counter()
    base = Base.load(folder)
    verdicts = Verdicts({}, {}, {})
    (folder / "py").mkdir()
    for i, text in enumerate(texts):
        fuzz_one(text, i, base, verdicts)
    if base.aiter_triton is not None:
        aiter_triton_exports(texts, base, verdicts)
    python = dict(verdicts.python)
    ran = run_python_files(list(python), {p: names for p, (_, names) in python.items()})
    for path, (stage, _) in python.items():
        verdicts.add(stage, CODE if path in ran else OK, ran.get(path, ""))
    return verdicts, time.perf_counter() - start


def report(verdicts: Verdicts, n: int, seed: int, seconds: float, aiter: bool) -> str:
    bad = sum(c[v] for c in verdicts.counts.values() for v in (CODE, UNPARSED))
    other = sum(c[v] for c in verdicts.counts.values() for v in (ALTERED, CRASHED))
    files = sum(c[v] for c in verdicts.counts.values() for v in COLUMNS if v != REFUSED)
    paired = sum(as_json_reads(text) != text for text in hostile_strings(n, seed))
    lines = [
        "# Export fuzz: hostile names through every importer and exporter", "",
        f"- command: `{shlex.join(['python', *sys.argv])}`",
        f"- commit: {code_commit(REPO, outputs=[RESULTS]) or 'not a git checkout'}",
        f"- hardware: {host_description()}",
        f"- versions: Python {platform.python_version()}, triton {version('triton')}, "
        f"amd-aiter {version('amd-aiter') if aiter else 'not importable (aiter-triton not run)'}",
        f"- date: {dt.date.today().isoformat()}", "",
        f"**{bad} outputs execute code or fail to parse** (target 0), of {files} checked outcomes over "
        f"{n} hostile inputs (seed {seed}); {other} altered a string or crashed; {seconds:.0f} s.", "",
        "Each input is one hostile string (see the script's docstring): line breaks, quotes, triple quotes, "
        "backslashes, `#`, code payloads, NUL, bidi overrides, lone surrogates, 10 kB strings, random code "
        "points; every other input is printable only, as an importer lets through. *refused*: the stage "
        "raised a one-line `FlysearchError` and wrote nothing; *data only*: the file parsed, was the "
        "exporter's scaffold with the values as literals (Python) or held the string unchanged (JSON, CSV), "
        "and a Python file, run, printed nothing and defined only its lists. A JSON string is UTF-16: a "
        "high surrogate followed by a low one (two code points of a Python string) reads back as the one "
        f"character the pair encodes, and is compared so ({paired} inputs hold such a pair; the Triton "
        "export's values pass through JSON too).", "",
        "| stage | " + " | ".join(COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    for stage in sorted(verdicts.counts, key=lambda s: (*ORDER, s).index(s)):
        counts = verdicts.counts[stage]
        lines.append(f"| {stage} | " + " | ".join(str(counts[v]) for v in COLUMNS) + " |")
    if verdicts.examples:
        lines += ["", "First failure of each kind:", ""]
        lines += [f"- {stage}, {verdict}: `{why!r}`" for (stage, verdict), why in verdicts.examples.items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="hostile inputs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="markdown file to write")
    args = parser.parse_args()
    memory = "/dev/shm" if Path("/dev/shm").is_dir() else None  # SQLite's syncs cost nothing there
    with tempfile.TemporaryDirectory(prefix="export-fuzz-", dir=memory) as tmp:
        verdicts, seconds = run_texts(hostile_strings(args.n, args.seed), Path(tmp))
    aiter = "export aiter-triton" in verdicts.counts
    text = report(verdicts, args.n, args.seed, seconds, aiter)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)
    bad = sum(c[v] for c in verdicts.counts.values() for v in (CODE, UNPARSED, ALTERED, CRASHED))
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
