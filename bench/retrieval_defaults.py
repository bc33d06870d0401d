"""Retrieval modes on several judged collections, through `ragflow-config run` and `eval`.

    python bench/fetch_collections.py                  # builds bench/collections/*/docs first
    python bench/retrieval_defaults.py [--collections med,cacm,...] [--sets base,group,prf]
        [--work /tmp/ragflow-defaults] [--med ../shared/data/ir/med]

For each collection (MED from ``--med``, the others from bench/collections/)
it writes one pipeline file per configuration into ``--work``, all naming
the same Qdrant folder and collection: MiniLM, the `token` chunker (each
chunk fits MiniLM's 256-piece window, so nothing is truncated), k = 10.
It indexes once with ``mode: hybrid`` (``ragflow-config run``), since the
retrieval mode, fusion, grouping and feedback are read at query time, then
runs ``ragflow-config eval DENSE.yaml CONFIG.yaml --json`` for every other
configuration: eval's paired randomisation test gives the p-values against
dense. Nothing is tuned: every setting is the project's default except the
one the configuration names.

Sets: ``base`` (dense, lexical, hybrid rrf, hybrid weighted at the default
weights 1/1), ``group`` (each with ``group_by: document``), ``prf`` (each
with ``feedback: {}``: RM3 on the lexical side, Rocchio on the dense side,
at their defaults), ``weights`` (hybrid weighted 0.7/0.3, the weights MED
favoured in bench/README's issue-22 section).
Writes bench/results/retrieval_defaults.json and prints a markdown table
(nDCG@10 and MAP, trec_eval's uncut ``map``, eval's ``map_uncut``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLLECTIONS = ["med", "cacm", "lisa", "npl", "adi"]

MODES: dict[str, dict[str, object]] = {
    "dense": {"mode": "dense"},
    "lexical": {"mode": "lexical"},
    "hybrid rrf": {
        "mode": "hybrid",
        "fusion": {"method": "rrf", "k": 60, "dense_weight": 1.0, "lexical_weight": 1.0},
    },
    "hybrid weighted 1/1": {
        "mode": "hybrid",
        "fusion": {"method": "weighted", "dense_weight": 1.0, "lexical_weight": 1.0},
    },
}
# Weights chosen on MED earlier (bench/README, issue 22), measured here as they were, not
# tuned; the default fusion since these measurements.
WEIGHTS: dict[str, dict[str, object]] = {
    "hybrid weighted 0.7/0.3": {
        "mode": "hybrid",
        "fusion": {"method": "weighted", "dense_weight": 0.7, "lexical_weight": 0.3},
    },
}
SETS: dict[str, tuple[str, dict[str, object]]] = {
    "base": ("", {}),
    "group": (" + group", {"group_by": "document"}),
    "prf": (" + prf", {"feedback": {}}),
}


def configurations(sets: list[str]) -> dict[str, dict[str, object]]:
    """Plain dense (the baseline every p-value is against) and each set's configurations,
    in the order the sets are given."""
    chosen: dict[str, dict[str, object]] = {"dense": MODES["dense"]}
    for key in sets:
        if key == "weights":
            chosen |= WEIGHTS
            continue
        suffix, extra = SETS[key]
        chosen |= {name + suffix: {**retrieval, **extra} for name, retrieval in MODES.items()}
    return chosen


def pipeline(name: str, folder: Path, store: Path, retrieval: dict[str, object]) -> str:
    """A pipeline file's text (JSON is YAML)."""
    spec = {
        "version": 1,
        "vector_stores": {"local": {"type": "qdrant", "parameters": {"path": str(store)}}},
        "embeddings": {"minilm": {"type": "minilm"}},
        "knowledge_bases": [
            {
                "name": name,
                "sources": [
                    {"path": str(folder / "docs"), "include": ["*.txt"], "allow_outside": True}
                ],
                "parsers": [{"type": "text"}],
                "chunker": {"type": "token"},
                "embedding": "minilm",
                "vector_store": "local",
                "collection": name,
                "retrieval": retrieval,
                "evaluation": {
                    "queries": str(folder / "qrels"),
                    "topics": str(folder / "topics"),
                    "k": 10,
                },
            }
        ],
    }
    return json.dumps(spec, indent=2) + "\n"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ragflow-config", *args], check=True, capture_output=True, text=True, cwd=ROOT
    )


def cpu_children() -> float:
    times = os.times()
    return times.children_user + times.children_system


def measure(name: str, folder: Path, work: Path, configs: dict[str, dict[str, object]]) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    store = work / "qdrant"
    files = {}
    index: dict[str, dict[str, object]] = {"index": {"mode": "hybrid"}}
    for label, retrieval in (index | configs).items():
        files[label] = work / (re.sub(r"[^a-z0-9.]+", "_", label) + ".yaml")
        files[label].write_text(pipeline(name, folder, store, retrieval), encoding="utf-8")
    wall, cpu = time.perf_counter(), cpu_children()
    run = cli("run", str(files["index"]), "-q")
    result: dict = {
        "index_wall_s": round(time.perf_counter() - wall, 1),
        "index_cpu_s": round(cpu_children() - cpu, 1),
        "run_output": run.stdout.strip().splitlines()[-3:],
        "configs": {},
    }
    for label in configs:
        if label == "dense":
            continue
        out = json.loads(cli("eval", str(files["dense"]), str(files[label]), "--json").stdout)
        runs = out["results"][name]
        dense, other = runs[str(files["dense"])], runs[str(files[label])]
        comparison = out["comparisons"][name]["metrics"]
        result["queries"] = dense["query_count"]
        result["configs"]["dense"] = {m: dense["metrics"][m] for m in ("ndcg", "map_uncut")}
        result["configs"][label] = {
            **{m: other["metrics"][m] for m in ("ndcg", "map_uncut")},
            **{f"p_{m}": comparison[m]["p_value"] for m in ("ndcg", "map_uncut")},
        }
        print(f"{name} {label}: {result['configs'][label]}", flush=True)
    return result


def _grid(
    results: dict[str, dict], names: list[str], corner: str, cell: Callable[[dict, dict, str], str]
) -> str:
    """A markdown table: a row per configuration, a column per collection; ``cell(row,
    dense, label)`` writes one (``row`` is None where the configuration was not measured)."""
    measured = {label for r in results.values() for label in r["configs"]}
    # The sets' order (base, weights, group, prf), then anything an older run measured.
    known = configurations(["base", "weights", "group", "prf"])
    labels = [label for label in known if label in measured] + sorted(measured - set(known))
    lines = [f"| {corner} | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label in labels:
        cells = []
        for name in names:
            configs = results[name]["configs"]
            row = configs.get(label)
            cells.append("—" if row is None else cell(row, configs["dense"], label))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table(results: dict[str, dict], metric: str) -> str:
    """One metric: each configuration's value, its difference from dense and the p-value."""

    def cell(row: dict, dense: dict, label: str) -> str:
        if label == "dense":
            return f"{row[metric]:.4f}"
        p = row[f"p_{metric}"]
        mark = "**" if p < 0.05 else ""
        shown = "p < 0.001" if p < 0.001 else f"p {p:.3f}"
        return f"{row[metric]:.4f} ({mark}{row[metric] - dense[metric]:+.3f}{mark}, {shown})"

    return _grid(results, list(results), "configuration", cell)


def tables(results: dict[str, dict]) -> str:
    queries = ", ".join(f"{name} {r.get('queries', '?')}" for name, r in results.items())
    return (
        f"nDCG@10 (queries: {queries})\n\n{table(results, 'ndcg')}\n\n"
        f"MAP (uncut)\n\n{table(results, 'map_uncut')}"
    )


def summary(results: dict[str, dict]) -> str:
    """The README's table: each configuration's nDCG@10 and MAP against dense, in one cell
    per collection (bold: p < 0.05, eval's paired randomisation test)."""

    def cell(row: dict, dense: dict, label: str) -> str:
        if label == "dense":
            return f"{row['ndcg']:.3f} / {row['map_uncut']:.3f}"
        parts = []
        for metric in ("ndcg", "map_uncut"):
            mark = "**" if row[f"p_{metric}"] < 0.05 else ""
            parts.append(f"{mark}{row[metric] - dense[metric]:+.3f}{mark}")
        return " / ".join(parts)

    names = [name for name in COLLECTIONS if name in results]
    return _grid(results, names, "nDCG@10 / MAP", cell)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", default=",".join(COLLECTIONS))
    parser.add_argument("--sets", default="base,group,prf,weights")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragflow-defaults"))
    parser.add_argument("--med", type=Path, default=ROOT.parent / "shared/data/ir/med")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/retrieval_defaults.json")
    parser.add_argument(
        "--merge", type=Path, nargs="*", default=[], help="fold these results files into --out"
    )
    parser.add_argument("--table", action="store_true", help="only print --out's table")
    parser.add_argument(
        "--summary", action="store_true", help="only print --out's one-table summary (README)"
    )
    args = parser.parse_args()
    configs = configurations(args.sets.split(","))
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    for other in args.merge:
        for name, fresh in json.loads(other.read_text()).items():
            previous = results.get(name, {})
            results[name] = {
                **previous,
                **fresh,
                "configs": {**previous.get("configs", {}), **fresh["configs"]},
            }
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if args.summary:
        print(summary(results))
        return
    if args.table or args.merge:
        print(tables(results))
        return
    for name in args.collections.split(","):
        folder = args.med if name == "med" else ROOT / "bench/collections" / name
        if not (folder / "docs").is_dir():
            raise SystemExit(
                f"{folder}/docs is missing: run python bench/fetch_collections.py first"
            )
        fresh = measure(name, folder.resolve(), args.work / name, configs)
        previous = results.get(name, {}).get("configs", {})
        results[name] = {**fresh, "configs": {**previous, **fresh["configs"]}}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(tables(results))


if __name__ == "__main__":
    main()
