"""Which backend wins per shape on a Hopper GPU (the H200, or an H100) when split-K, TMA and cuBLAS
are timed in the same rounds.

    python lab/benchmarks/backend_rounds.py run --splitk lab/benchmarks/data/h200_stages5 \\
        --splitk lab/benchmarks/data/h200_stages5_holdout --tma lab/benchmarks/data/h200_tma \\
        --tma lab/benchmarks/data/h200_tma_holdout --out /tmp/o/backend_rounds.json            # GPU
    python lab/benchmarks/backend_rounds.py run ... --dry-run                                  # CPU
    python lab/benchmarks/backend_rounds.py report \\
        --json lab/benchmarks/data/h200_backend_rounds/backend_rounds.json \\
        --repeat lab/benchmarks/data/h200_backend_rounds/backend_rounds_top5.json              # CPU

The committed races timed cuBLAS once per shape, before the first config, while the GPU had been
idle; timed beside a Triton kernel in interleaved rounds, cuBLAS took 4-13% longer on compute-bound
shapes (``tma_programs.md``). So the races' best Triton / cuBLAS ratios favour cuBLAS there. This
benchmark re-measures the committed tables without that bias: for each shape raced by both
families, the ``--top`` fastest configs of its split-K table and of its TMA table (ranked by each
table's confirmed order) and cuBLAS (``torch.mm(A, W.t())``) are timed in ``--rounds`` interleaved
rounds, each round every entry once in an order shuffled with a fixed seed. Every timing is the
races' own protocol (:func:`flysearch.evaluators.shape_bench`: rotating input sets a few times the
L2 size, the median of batch means, the result validated against the fp32 reference); a split-K
or fused split-K config is launched as its race launched it (the compiled binary, split-K's
reduction included), a TMA config as a replay of a CUDA graph of its launcher, as its race did.
With ``--fused``, the shapes that folder holds a fused split-K table of (``flysearch race run
--space triton_gemm_splitk_fused``) get that family's top configs too. Per entry the median over
rounds is kept; ``run`` writes the JSON after every shape and skips the shapes it already holds, so
a stopped run resumes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCHMARKS))  # _race_helpers, also when imported as a module

from _race_helpers import load  # noqa: E402

from flysearch.compare import code_commit  # noqa: E402
from flysearch.race import vendor_ms  # noqa: E402
from flysearch.space import Shape, device_label  # noqa: E402
from flysearch.tables import GroundTruth  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

CUBLAS = "cublas"
VERSIONS = ("torch", "triton", "cuda", "driver", "python")
FAMILIES = {"splitk": "triton_gemm", "tma": "triton_gemm_tma", "fused": "triton_gemm_fused"}
"""Each family's label here and the kernel name its table files start with. Split-K and TMA are in
every run; the fused split-K family where ``--fused`` gives tables of the shape."""
NAMES = {"splitk": "split-K", "tma": "TMA", "fused": "fused split-K"}
TARGETS = {"decode": 1.00, "small_m": 1.05, "k_heavy": 1.05, "prefill": 1.05, "square": 1.05}
"""The kernels issue's targets: best Triton / cuBLAS, median per regime."""


# -- tables and configs (no GPU) ------------------------------------------------------------------


def tables_by_shape(folders: list[Path], kernel: str) -> dict[str, Path]:
    """``{"MxNxK": path}`` of *kernel*'s tables in *folders*, whatever GPU their names give (the
    first folder holding a shape wins)."""
    out: dict[str, Path] = {}
    for folder in folders:
        for path in sorted(folder.glob(f"{kernel}__*__*.table.json.gz")):
            out.setdefault(path.name.split("__")[-1].split(".")[0], path)
    return out


def top_configs(table: GroundTruth, top: int) -> list[dict[str, Any]]:
    """The table's *top* fastest correct configs in its confirmed order, with their table times."""
    retimed = table.retimed_ms()
    return [{"key": r.key, "params": dict(r.params), "table_ms": float(retimed.get(r.key, r.time_ms or 0.0))}
            for r in table.ranked()[:top]]


def select(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The shapes raced by both families (or those of ``--shapes``), smallest M first, each with its
    two tables (three with ``--fused``) and their top configs; the tables must come from one GPU."""
    splitk = tables_by_shape(args.splitk, FAMILIES["splitk"])
    tma = tables_by_shape(args.tma, FAMILIES["tma"])
    fused = tables_by_shape(args.fused or [], FAMILIES["fused"])
    if args.fused and not fused:
        sys.exit(f"no fused split-K table ({FAMILIES['fused']}__*) in: {', '.join(map(str, args.fused))}")
    names = [n for n in splitk if n in tma] if not args.shapes else list(args.shapes)
    missing = [n for n in names if n not in splitk or n not in tma]
    if missing:
        sys.exit(f"no split-K and TMA table for: {', '.join(missing)}")
    out, gpus = [], set()
    for name in sorted(names, key=lambda n: tuple(int(x) for x in n.split("x"))):
        entry: dict[str, Any] = {"shape": name, "families": {}}
        paths = [("splitk", splitk[name]), ("tma", tma[name])]
        paths += [("fused", fused[name])] if name in fused else []
        for family, path in paths:
            table = load(path)
            gpus.add(device_label(table.meta.device))
            entry["families"][family] = {"table": _rel(path), "race_vendor_ms": vendor_ms(table.meta),
                                         "configs": top_configs(table, args.top)}
        out.append(entry)
    if len(gpus) > 1:  # a config's rank holds on the GPU that raced it
        sys.exit(f"tables raced on several GPUs ({', '.join(sorted(gpus))}); time one GPU's tables at a time")
    return out


def _rel(path: Path) -> str:
    p = path.resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(path)


def parse_shape(name: str) -> Shape:
    m, n, k = (int(x) for x in name.split("x"))
    return Shape(m, n, k)


# -- timing (GPU) ---------------------------------------------------------------------------------


def _launchers(bench: Any, shape: Shape, entry: dict[str, Any]) -> dict[str, Callable[[], dict[str, Any]]]:
    """``{entry id: time it once}`` for cuBLAS and every config of both families."""
    from flysearch.kernels import spec_key, tma_gemm_launcher

    spec = spec_key(shape)
    timers: dict[str, Callable[[], dict[str, Any]]] = {CUBLAS: bench.time_vendor}
    for c in entry["families"]["splitk"]["configs"]:
        timers[f"splitk:{c['key']}"] = lambda p=c["params"]: bench.time_config(p, spec, "sm_90", None)
    for c in entry["families"]["tma"]["configs"]:
        params = c["params"]
        launch = bench.graph_launch(lambda a, w, out, p=params: tma_gemm_launcher(a, w, out, p))
        timers[f"tma:{c['key']}"] = lambda f=launch: bench.time_launch(f, 1)
    for c in entry["families"].get("fused", {}).get("configs", []):
        timers[f"fused:{c['key']}"] = lambda p=c["params"]: bench.time_config(
            p, spec, "sm_90", None, "triton_gemm_splitk_fused")
    return timers


def run_shape(entry: dict[str, Any], rounds: int, seed: int) -> dict[str, Any]:
    """Time cuBLAS and *entry*'s configs in interleaved rounds; *entry* with their rounds added."""
    from flysearch.evaluators import interleaved_rounds, rounds_record, shape_bench

    shape = parse_shape(entry["shape"])
    bench = shape_bench(shape.as_dict())
    timers = _launchers(bench, shape, entry)

    def time_one(item: str) -> float | str | None:
        res = timers[item]()
        if res.get("fatal"):
            raise RuntimeError(f"the GPU context failed on {item}: {res.get('detail')}")
        return res["time_ms"] if res["outcome"] == "ok" else res.get("detail") or res["outcome"]

    samples, failed = interleaved_rounds(list(timers), time_one, rounds, seed, key=lambda k: k)
    timers.clear()  # free the graphs before the next shape's inputs

    def record(item: str) -> dict[str, Any]:
        return rounds_record(samples.get(item, []), failed.get(item))

    result = {**entry, "regime": shape.regime, "cublas": record(CUBLAS)}
    for family, fam in result["families"].items():
        for c in fam["configs"]:
            c.update(record(f"{family}:{c['key']}"))
    return result


def run(args: argparse.Namespace) -> None:
    chosen = select(args)
    if args.dry_run:
        for e in chosen:
            for family, fam in e["families"].items():
                tops = ", ".join(f"{c['table_ms']:.4f}" for c in fam["configs"])
                print(f"{e['shape']} {family}: {fam['table']} (race cuBLAS {fam['race_vendor_ms']} ms); "
                      f"top {tops} ms", flush=True)
        return
    if args.out is None:
        sys.exit("run needs --out (or --dry-run)")
    from flysearch.evaluators import device_info, protocol_dict

    started = time.monotonic()
    doc: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {"shapes": []}
    done = {s["shape"] for s in doc["shapes"]}
    info = device_info()
    doc.setdefault("provenance", {
        "command": " ".join(["python", *sys.argv]), "commit": code_commit(ROOT, outputs=[RESULTS]),
        "date": dt.date.today().isoformat(), "device": info["device"], "versions": info["versions"],
        "rounds": args.rounds, "seed": args.seed, "top": args.top, "protocol": protocol_dict(),
    })
    if doc["provenance"]["device"] != info["device"]:
        sys.exit(f"{args.out} was timed on an {doc['provenance']['device']}, this is an {info['device']}; "
                 "give another --out")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    todo = [e for e in chosen if e["shape"] not in done]
    if done and todo:  # a resumed run: its shapes were timed in another session, so say which and when
        doc["provenance"].setdefault("resumed", []).append({
            "command": " ".join(["python", *sys.argv]), "commit": code_commit(ROOT, outputs=[RESULTS]),
            "date": dt.date.today().isoformat(), "shapes": [e["shape"] for e in todo]})
    print(f"{info['device']}: {len(todo)} shapes to time ({len(done)} done), {args.top} configs per "
          f"family, {args.rounds} rounds", flush=True)
    for i, entry in enumerate(chosen):
        if entry["shape"] in done:
            continue
        if args.deadline is not None and time.monotonic() - started > args.deadline:
            print(f"deadline: {entry['shape']} and later shapes not timed (a rerun resumes)", flush=True)
            break
        t0 = time.monotonic()
        try:
            result = run_shape(entry, args.rounds, args.seed + i)
        except RuntimeError as exc:
            print(f"{entry['shape']}: {exc}; stopping", flush=True)
            break
        doc["shapes"].append(result)
        doc["provenance"]["wall_s"] = round(doc["provenance"].get("wall_s", 0) + time.monotonic() - t0, 1)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(args.out)  # after every shape, whole: a kill keeps the shapes before it
        print(_shape_line(result) + f" ({time.monotonic() - t0:.0f} s)", flush=True)
    print(f"{args.out}: {len(doc['shapes'])} shapes", flush=True)


# -- report (CPU) ---------------------------------------------------------------------------------


def best_of(result: dict[str, Any], family: str) -> tuple[float, str] | None:
    """The fastest median of *family*'s configs in *result*'s rounds, and its key."""
    times = [(c["median_ms"], c["key"]) for c in result["families"][family]["configs"] if "median_ms" in c]
    return min(times) if times else None


def ratios(result: dict[str, Any]) -> dict[str, float | None]:
    """Each family's best and the best Triton config over cuBLAS, all timed in *result*'s rounds
    (``None`` for a family not timed there)."""
    cublas = result["cublas"].get("median_ms")
    out: dict[str, float | None] = {}
    for family in FAMILIES:
        b = best_of(result, family) if family in result["families"] else None
        out[family] = b[0] / cublas if b and cublas else None
    present = [v for v in out.values() if v is not None]
    out["triton"] = min(present) if present else None
    return out


def race_ratio(result: dict[str, Any], family: str) -> float | None:
    """The family's table's best over its race's cuBLAS time (what ``tma_h200.md`` reports)."""
    fam = result["families"][family]
    confs = fam["configs"]
    return confs[0]["table_ms"] / fam["race_vendor_ms"] if confs and fam.get("race_vendor_ms") else None


def tma_moved(result: dict[str, Any]) -> float | None:
    """The TMA table's confirmed best config timed here, over its time in the table."""
    first = result["families"]["tma"]["configs"][:1]
    return first[0]["median_ms"] / first[0]["table_ms"] if first and "median_ms" in first[0] else None


def fastest(r: dict[str, float | None]) -> str:
    options = {**{NAMES[f]: r[f] for f in FAMILIES}, "cuBLAS": 1.0}
    return min((v, k) for k, v in options.items() if v is not None)[1]


def _shape_line(result: dict[str, Any]) -> str:
    r = ratios(result)
    return (f"{result['shape']} ({result['regime']}): cuBLAS {result['cublas'].get('median_ms')} ms; split-K "
            f"/ cuBLAS {_f(r['splitk'])}, TMA / cuBLAS {_f(r['tma'])}; fastest {fastest(r)}")


def _met(ratio: float | None, target: float | None) -> str:
    return "-" if target is None or ratio is None else ("yes" if ratio <= target else "no")


def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def report(args: argparse.Namespace) -> None:
    doc = json.loads(args.json.read_text())
    prov = doc["provenance"]
    repeat: dict[str, dict[str, Any]] = {}
    if getattr(args, "repeat", None):
        again = json.loads(args.repeat.read_text())
        repeat = {s["shape"]: s for s in again["shapes"]}
        rp = again["provenance"]
    versions = prov.get("versions", {})
    fused = any("fused" in s["families"] for s in doc["shapes"])
    fcol = ["fused"] if fused else []
    lines = [
        f"# Split-K, {'fused split-K, ' if fused else ''}TMA and cuBLAS timed in the same rounds on the "
        f"{device_label(prov['device'])}",
        "",
        f"- command: `{' '.join(['python', *sys.argv])}`",
        f"- measured with: `{prov['command']}`",
        f"- commit: {prov.get('commit') or 'not recorded'}",
        f"- hardware: {prov['device']}; report on {platform.machine()}",
        "- versions: " + ", ".join(f"{k} {versions[k]}" for k in VERSIONS if versions.get(k)),
        f"- date: {prov['date']}; {len(doc['shapes'])} shapes in {prov.get('wall_s', '-')} s of timing",
        *(f"- resumed in another session ({r['date']}, commit {r['commit']}): `{r['command']}`; its shapes: "
          f"{', '.join(r['shapes'])}" for r in prov.get("resumed", [])),
        "",
        f"Per shape, the {prov['top']} fastest configs of its committed split-K table and of its TMA table "
        f"and cuBLAS (`torch.mm(A, W.t())`), timed in {prov['rounds']} interleaved rounds (each round every "
        "entry once, shuffled), each timing the races' protocol. Ratios are medians over the rounds, best "
        "config / cuBLAS, so both sides share the GPU's state. *race*: the same ratio as the races "
        "measured it (the table's confirmed best / the cuBLAS time its race took once, before any config). "
        "*cuBLAS here / race*: cuBLAS here over the split-K race's cuBLAS time; *TMA here / table*: the TMA "
        "table's confirmed best here over its time in the table. Both columns compare two sessions, so "
        "they move with the GPU's state; the ratios in one set of rounds do not.",
    ]
    if fused:
        lines += ["", f"*fused*: the {prov['top']} fastest configs of the shape's fused split-K table "
                  "(split-K with its reduction inside its one launch), where one is given, timed in the "
                  "same rounds."]
    if repeat:
        lines += ["", f"*repeat*: best / cuBLAS in a second run, `{rp['command']}` ({rp['date']}, "
                  f"{rp['top']} configs per family, seed {rp['seed']}): how far one run's ratios move."]
    lines += [
        "",
        "| shape | regime | cuBLAS ms | cuBLAS here / race | TMA here / table | split-K / cuBLAS "
        "| TMA / cuBLAS |" + (" fused / cuBLAS |" if fused else "") + " best / cuBLAS | best / cuBLAS, race "
        "| fastest |" + (" repeat |" if repeat else ""),
        "|---|---|---:|---:|---:|---:|---:|" + ("---:|" if fused else "") + "---:|---:|---|"
        + ("---:|" if repeat else ""),
    ]
    by_regime: dict[str, dict[str, list[float]]] = {}
    wins: dict[str, int] = {}
    for s in doc["shapes"]:
        r = ratios(s)
        race = [x for x in (race_ratio(s, f) for f in FAMILIES if f in s["families"]) if x is not None]
        race_best = min(race) if race else None
        race_vendor = s["families"]["splitk"].get("race_vendor_ms")
        here_vendor = s["cublas"].get("median_ms")
        win = fastest(r)
        wins[win] = wins.get(win, 0) + 1
        again = ratios(repeat[s["shape"]])["triton"] if s["shape"] in repeat else None
        held_out = "holdout" in s["families"]["tma"]["table"]
        groups = (s["regime"], "all", *((f"{s['regime']}, held out", "all, held out") if held_out else ()))
        for group in groups:
            g = by_regime.setdefault(group, {"splitk": [], "tma": [], "fused": [], "triton": [], "race": [],
                                             "repeat": []})
            for k in ("splitk", "tma", "fused", "triton"):
                if r[k] is not None:
                    g[k].append(r[k])
            if race_best is not None:
                g["race"].append(race_best)
            if again is not None:
                g["repeat"].append(again)
        lines.append("| " + " | ".join([
            s["shape"], s["regime"], _f(here_vendor, 4),
            _f(here_vendor / race_vendor if here_vendor and race_vendor else None), _f(tma_moved(s)),
            _f(r["splitk"]), _f(r["tma"]), *(_f(r[k]) for k in fcol), _f(r["triton"]), _f(race_best), win,
            *([_f(again)] if repeat else []),
        ]) + " |")
    lines += ["", "Per regime, medians over shapes (target of the kernels issue: best Triton / cuBLAS "
              "<= 1.00 on decode, <= 1.05 elsewhere); *held out*: the shapes whose tables are in a "
              "`holdout` folder, chosen and committed before they were raced:", "",
              "| regime | shapes | split-K / cuBLAS | TMA / cuBLAS |" + (" fused / cuBLAS |" if fused else "")
              + " best / cuBLAS | target | met | best / cuBLAS, race |"
              + (" repeat | met |" if repeat else ""),
              "|---|---:|---:|---:|" + ("---:|" if fused else "") + "---:|---:|---|---:|"
              + ("---:|---|" if repeat else "")]
    order = [*TARGETS, "all"]
    order += [f"{g}, held out" for g in order]
    for group in sorted(by_regime, key=lambda g: order.index(g) if g in order else len(order)):
        g = by_regime[group]
        med = {k: statistics.median(v) if v else None for k, v in g.items()}
        target = TARGETS.get(group.split(",")[0])
        cells = [group, str(len(g["triton"])), _f(med["splitk"]), _f(med["tma"]), *(_f(med[k]) for k in fcol),
                 _f(med["triton"]),
                 _f(target, 2), _met(med["triton"], target), _f(med["race"])]
        if repeat:
            cells += [_f(med["repeat"]), _met(med["repeat"], target)]
        lines.append("| " + " | ".join(cells) + " |")
    won = ", ".join(f"{k} {v}" for k, v in sorted(wins.items()))
    lines += ["", f"Fastest backend per shape: {won}."]
    failed = [f"{s['shape']} {k}" for s in doc["shapes"] for fam in s["families"].values()
              for c in fam["configs"] if "failed" in c for k in [c["key"]]]
    if failed:
        lines += ["", "Failed in the rounds: " + "; ".join(failed) + "."]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="time the backends on a CUDA GPU (or --dry-run)")
    r.add_argument("--splitk", type=Path, action="append", required=True, help="folder of split-K tables")
    r.add_argument("--tma", type=Path, action="append", required=True, help="folder of TMA tables")
    r.add_argument("--fused", type=Path, action="append", default=None,
                   help="folder of fused split-K tables (optional; the shapes they hold get the family)")
    r.add_argument("--shapes", nargs="+", default=None, help="MxNxK ... (default: every shape of both)")
    r.add_argument("--top", type=int, default=3, help="configs per family, fastest first")
    r.add_argument("--rounds", type=int, default=10)
    r.add_argument("--seed", type=int, default=0, help="seed of the rounds' orders (shape i uses seed + i)")
    r.add_argument("--out", type=Path, default=None, help="JSON file to write (resumed when it exists)")
    r.add_argument("--deadline", type=float, default=None, help="start no shape after this many s")
    r.add_argument("--dry-run", action="store_true", help="print the shapes and configs, no CUDA")
    p = sub.add_parser("report", help="markdown from the JSON of run (CPU)")
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--repeat", type=Path, default=None,
                   help="JSON of a second run of the same shapes: its best / cuBLAS beside the first's")
    p.add_argument("--out", type=Path, default=BENCHMARKS / "results" / "backend_rounds.md")
    args = ap.parse_args()
    run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    main()
