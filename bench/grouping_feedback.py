"""Document grouping and pseudo-relevance feedback on MED, measured by `ragflow-config eval`.

    python bench/grouping_feedback.py [--med ../shared/data/ir/med] [--out /tmp/ragflow-gf]

Writes one pipeline file per variant into ``--out``: MED's own
``pipeline.yaml`` with a ``retrieval:`` block (dense, lexical, hybrid ``rrf``;
each plain, grouped by document with ``max`` and with ``sum_top_2``, with
``feedback: {}`` (RM3 and Rocchio at their defaults), grouped with feedback),
all reading one hybrid index, since these settings are read at query time.
Indexes it once with ``ragflow-config run``, then runs ``ragflow-config eval
BASE.yaml VARIANT.yaml --json`` against the plain file of the variant's mode
and against dense, and prints a Markdown table of nDCG@10 and MAP (eval's
``map_uncut``) with the paired randomisation test's p-values.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

MODES = {
    "dense": {"mode": "dense"},
    "lexical": {"mode": "lexical"},
    "hybrid rrf": {"mode": "hybrid"},
}
VARIANTS = {
    "": {},
    "+ group max": {"group_by": "document"},
    "+ group sum_top_2": {"group_by": "document", "aggregate": "sum_top_2"},
    "+ PRF": {"feedback": {}},
    "+ group max + PRF": {"group_by": "document", "feedback": {}},
}
METRICS = ("ndcg", "map_uncut")  # nDCG@k (k = 10 in MED's file) and MAP over 1,000 sources


def pipeline_file(med: Path, out: Path, name: str, retrieval: dict[str, Any]) -> Path:
    """MED's pipeline with ``retrieval`` added to its knowledge base; sources stay in ``med``."""
    text = (med / "pipeline.yaml").read_text(encoding="utf-8")
    text = text.replace("      - path: docs\n", f"      - path: {med / 'docs'}\n")
    text = text.replace("        include:", "        allow_outside: true\n        include:")
    text = text.replace("queries: qrels", f"queries: {med / 'qrels'}")
    text = text.replace("topics: topics", f"topics: {med / 'topics'}")
    text = text.replace(
        "    prune: true\n", f"    prune: true\n    retrieval: {json.dumps(retrieval)}\n"
    )
    path = out / f"{name.replace(' ', '_').replace('+', 'with')}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def ragflow(*args: str) -> str:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("ragflow-config")), *args],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):  # eval exits 1 when a threshold fails; MED sets none
        raise SystemExit(f"ragflow-config {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def compared(base: Path, variant: Path) -> tuple[dict[str, float], dict[str, Any]]:
    """``eval BASE VARIANT --json``: the variant's means, and each metric's difference
    (variant minus base) with its p-value."""
    report = json.loads(ragflow("eval", str(base), str(variant), "--json", "-q"))
    means = report["results"]["med"][str(variant)]["metrics"]
    return means, report["comparisons"]["med"]["metrics"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--med", type=Path, default=Path("../shared/data/ir/med"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/ragflow-gf"))
    args = parser.parse_args()
    med, out = args.med.resolve(), args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("RAGFLOW_IR_STORE", str(out / "qdrant"))
    files = {
        (mode, variant): pipeline_file(med, out, f"{mode} {variant}".strip(), {**base, **more})
        for mode, base in MODES.items()
        for variant, more in VARIANTS.items()
    }
    ragflow("run", str(files["hybrid rrf", ""]), "-q")
    dense = files["dense", ""]
    print("| mode | variant | nDCG@10 | vs same mode | vs dense | MAP | vs same mode | vs dense |")
    print("|---|---|---|---|---|---|---|---|")
    for (mode, variant), path in files.items():
        plain = files[mode, ""]
        means, against_dense = compared(dense, path)
        against_mode = compared(plain, path)[1] if path != plain else None
        cells = []
        for metric in METRICS:
            cells += [
                f"{means[metric]:.4f}",
                change(against_mode, metric),
                change(against_dense if path != dense else None, metric),
            ]
        print(f"| {mode} | {variant or 'plain'} | " + " | ".join(cells) + " |", flush=True)


def change(comparison: dict[str, Any] | None, metric: str) -> str:
    if comparison is None:
        return "—"
    row = comparison[metric]
    return f"{row['difference']:+.4f} (p {row['p_value']:.3f})"


if __name__ == "__main__":
    main()
