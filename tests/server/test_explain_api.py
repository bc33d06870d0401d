"""``"explain": true`` in the HTTP API: each hit carries the explain ``search --explain`` gives."""

from __future__ import annotations

from pathlib import Path

import httpx

from ragflow_config.pipeline import Pipeline

from ._serving import ServerProcess

QUERY = "read a file line by line"


async def test_explain_true_gives_each_hit_its_explain_and_keeps_the_ranking(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    async with Pipeline.load(indexed).build(["tutorial"]) as built:
        hits = await built.knowledge_base("tutorial").search([QUERY], top_k=3, explain=True)
        expected = [hit.model_dump(mode="json") for hit in hits]
    server = server_process(str(indexed))
    url = "/v1/knowledge-bases/tutorial/search"
    with httpx.Client(base_url=server.url) as client:
        explained = client.post(url, json={"query": QUERY, "top_k": 3, "explain": True})
        assert explained.status_code == 200, explained.text
        assert explained.json()["hits"] == expected
        first = explained.json()["hits"][0]["explain"]
        assert first["mode"] == "dense" and first["dense"]["rank"] == 1
        assert first["metadata_filter"] == {"tenant_id": "tutorial"}
        plain = client.post(url, json={"query": QUERY, "top_k": 3}).json()["hits"]
        assert [{k: v for k, v in hit.items() if k != "explain"} for hit in expected] == plain
        refused = client.post(url, json={"query": QUERY, "explain": "yes"})
        assert refused.status_code == 400 and "explain" in refused.text
        schema = client.get("/openapi.json").json()["components"]["schemas"]
        assert schema["SearchRequest"]["properties"]["explain"]["type"] == "boolean"
        assert "HitExplain" in schema
