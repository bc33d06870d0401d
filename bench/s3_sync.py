"""What an S3 source fetches: a bucket of N objects, counted at the server.

    python bench/s3_sync.py [--objects 10000]

moto's S3 server on loopback behind the counting proxy of the tests
(tests/sources/_s3_server.py), the hashing model, Qdrant's local mode. Runs, each
through the command line in this process: the first run, `plan` and `run` of the
unchanged bucket, then one object edited: `plan`, `run`, and `run` again. Prints a
Markdown table of each step's listing requests, object GETs, wall seconds and CPU
seconds (of this whole process: the server and the proxy run in its threads).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from sources._runs import write_pipeline  # noqa: E402
from sources._s3_server import S3Server  # noqa: E402

from ragflow_config.cli import main as cli  # noqa: E402

SOURCE = """\
      - type: s3
        parameters: {{url: "s3://bench/kb", endpoint_url: "{endpoint}", region: us-east-1}}
"""


def step(path: Path, server: S3Server, command: str) -> tuple[str, int, int, float, float, str]:
    server.requests.clear()
    options = ["--workers", "0"] if command == "run" else []
    wall, cpu = time.perf_counter(), time.process_time()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli([command, str(path), "--json", *options])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    [kb] = json.loads(out.getvalue())["knowledge_bases"]
    changed = {k: v for k, v in kb["counts"].items() if v and k != "unchanged"}
    assert code == 0, out.getvalue()[:500]
    summary = ", ".join(f"{k} {v:,}" for k, v in changed.items()) or "none"
    return command, server.requests.listings(), server.requests.object_gets(), wall, cpu, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objects", type=int, default=10_000)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    server = S3Server()
    try:
        server.client.create_bucket(Bucket="bench")
        for i in range(args.objects):
            body = f"# Note {i}\n\nNote {i} is about topic {i % 97} and item {i}.\n"
            server.client.put_object(Bucket="bench", Key=f"kb/n{i:05d}.md", Body=body.encode())
        with tempfile.TemporaryDirectory() as folder:
            path = write_pipeline(Path(folder), SOURCE.format(endpoint=server.endpoint))
            rows = [("first run", *step(path, server, "run")[1:])]
            rows += [(f"unchanged {c}", *step(path, server, c)[1:]) for c in ("plan", "run")]
            body = b"# Note 7\n\nNote 7 was edited.\n"
            server.client.put_object(Bucket="bench", Key="kb/n00007.md", Body=body)
            rows += [(f"one edited, {c}", *step(path, server, c)[1:]) for c in ("plan", "run")]
            rows.append(("unchanged run after", *step(path, server, "run")[1:]))
    finally:
        server.stop()
    print(f"{args.objects:,} objects\n")
    print("| step | listing requests | object GETs | wall s | CPU s | changes |")
    print("|---|---:|---:|---:|---:|---|")
    for name, listings, gets, wall, cpu, summary in rows:
        print(f"| {name} | {listings} | {gets:,} | {wall:.2f} | {cpu:.2f} | {summary} |")


if __name__ == "__main__":
    main()
