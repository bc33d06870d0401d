"""The core never imports AgentScope; the bridge says which extra it needs."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def test_importing_the_package_and_the_bridge_does_not_import_agentscope() -> None:
    done = run(
        """
        import sys
        import ragflow_config.agentscope_bridge, ragflow_config.pipeline, ragflow_config.rag
        print(sorted(name for name in sys.modules if name.split(".")[0] == "agentscope"))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_agentscope_the_bridge_names_the_extra() -> None:
    done = run(
        """
        import asyncio, sys
        sys.modules["agentscope"] = None  # as if it were not installed
        from ragflow_config import MissingExtraError
        from ragflow_config.embedding import HashingEmbeddingModel
        from ragflow_config.rag import KnowledgeBase, QdrantStore
        from ragflow_config.agentscope_bridge import knowledge_base

        kb = KnowledgeBase(name="kb", description="", embedding_model=HashingEmbeddingModel(),
                           vector_store=QdrantStore(location=":memory:"), collection="kb")
        try:
            knowledge_base(kb)
        except MissingExtraError as error:
            print(error)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'ragflow-config[agentscope]'" in done.stdout
