"""Milvus Lite 2.5.1 hides an upserted row for a moment: shown, and LiteClock's wait tested.

Milvus Lite stamps inserted rows with ``(wall ms << 18) + rows inserted since
its server started`` and reads with ``wall ms << 18``; an upsert deletes the old
row at once. Once the server has inserted a few million rows, a read sent right
after an upsert finds nothing. This script upserts ``--rows`` rows first (about
2 minutes for 3 million on a 2-core machine), then upserts 4 rows and reads them
back at once, without and then with ``LiteClock.settle()`` before the read.

    python bench/milvus_lite_visibility.py --rows 3000000
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from pymilvus import DataType, MilvusClient

from ragflow_config.rag._stores._lite_clock import LiteClock

_BATCH = 5000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000, help="rows upserted first")
    parser.add_argument("--trials", type=int, default=20, help="upsert-then-read rounds")
    args = parser.parse_args()

    client = MilvusClient(str(Path(tempfile.mkdtemp()) / "visibility.db"))
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.VARCHAR, max_length=16, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    index = MilvusClient.prepare_index_params()
    index.add_index("v", index_type="AUTOINDEX", metric_type="IP")
    client.create_collection("t", schema=schema, index_params=index)
    clock = LiteClock()

    def upsert(rows: list[dict[str, object]]) -> None:
        client.upsert("t", rows)
        clock.inserted(len(rows))

    filler = [{"id": f"f{i}", "v": [1.0, 0.5]} for i in range(_BATCH)]
    started = time.perf_counter()
    for _ in range(args.rows // _BATCH):
        upsert(filler)
    print(f"{clock.rows_inserted:,} rows upserted in {time.perf_counter() - started:.0f} s")

    probe = [{"id": f"k{i}", "v": [1.0, float(i)]} for i in range(4)]
    for waits in (False, True):
        short = 0
        for _ in range(args.trials):
            upsert(probe)
            if waits:
                asyncio.run(clock.settle())
            found = client.query("t", filter='id like "k%"', output_fields=["id"], limit=10)
            short += len(found) < len(probe)
        label = "after LiteClock.settle()" if waits else "read at once"
        print(f"{label}: {short} of {args.trials} reads missed rows")


if __name__ == "__main__":
    main()
