"""Indexing: plan what changed since the last run, then parse, chunk, embed and write it.

State lives in the vector store itself, in chunk 0's ``metadata["ragflow"]``:
the file's path and content hash, the pipeline fingerprint that produced the
vectors, the document's revision and its chunk count (the other chunks carry
the revision alone). A fresh CI runner needs no local state, and an
interrupted run converges when started again:

* chunks are written last-first, so chunk 0 (which supplies a document's
  summary) carries the new revision only once the rest is stored;
* a document whose chunk 0 is missing, or whose stored chunk count disagrees
  with its recorded one, is repaired (deleted and written again);
* an updated document's new chunks overwrite the old ones in place before the
  old version's leftovers are deleted, so a search never finds it missing.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, cast

from .._errors import ParserError, RagflowError, UnstorableDocumentError
from .._observe import observed
from ..embedding import (
    EmbeddingCacheBase,
    EmbeddingModelBase,
    EmbeddingResponse,
    VectorCounts,
    vectors_digest,
)
from ..executors import ExecutorBase, StartedExecutor
from ..executors.local import parse_and_chunk
from ..message import TextBlock
from ..rag import Chunk, DocumentSummary, KnowledgeBase, ParserBase
from ..rag._media_types import detect
from ..rag._stores._pointer import Remembered
from ..sources import SourceFile, SourceSpec, content_hash, document_id
from ._adopt import Adoption, Foreign, adopt, find_foreign
from ._budget import ByteBudget
from ._build import BuiltPipeline, IndexingPlan
from ._generations import (
    STATE_KEY,
    FailedFiles,
    Rebuild,
    begin,
    check,
    complete,
    kept_target,
    leave_unswitched,
    rebuild_reasons,
    retire,
    switch,
)
from ._generations import state as _state
from ._owners import WRITER_KEY, other_writer, shared_reason, writer
from ._registry import default_registry
from ._settings import SettingChange, described_settings, most_common_settings, setting_changes
from ._sources import discover, source_kind
from ._yielded_nothing import REMEMBERED, remember, remembered

Action = Literal[
    "add",
    "update",
    "repair",
    "unchanged",
    "delete",
    "keep",
    "unsupported",
    "empty",
    "skipped",
    "failed",
    "unreadable",
    "foreign",  # a document no run wrote (see _adopt)
]
_READ_INLINE_BYTES = 1 << 20
# Unchanged files are decided without awaiting anything. A run inside `serve` (a refresh)
# shares the event loop with searches, so each task gives it back after this many files:
# a slice of a few milliseconds, and a few thousand yields at 100,000 files.
_YIELD_EVERY = 32


class RunRefused(RagflowError):
    """A run or plan stopped before writing, because going on would need ``--force``."""


@dataclass
class Change:
    """What happens (or would happen) to one document."""

    action: Action
    path: str
    document_id: str
    reason: str = ""
    chunks: int = 0
    #: Of ``chunks``, those longer than the embedding model reads of one text: their
    #: ends are not embedded. 0 also when the model cannot tell (``count_truncated``).
    truncated: int = 0
    #: The outcome an earlier run found for the same content and pipeline, reported
    #: again without parsing the file (``_yielded_nothing``).
    remembered: bool = False

    @property
    def failed(self) -> bool:
        """Whether the file could not be read or parsed: a failure of the run."""
        return self.action in ("failed", "unreadable")


@dataclass
class DeletionGuard:
    """The mass-deletion guard's verdict: how many documents a run would delete, of how many."""

    deleting: int
    documents: int
    max_fraction: float
    forced: bool = False

    @property
    def share(self) -> float:
        return self.deleting / self.documents if self.documents else 0.0

    @property
    def over(self) -> bool:
        """Whether the share deleted is more than ``max_delete_fraction`` allows."""
        return self.deleting > 0 and self.share > self.max_fraction

    @property
    def refused(self) -> bool:
        """Whether the run stops before writing: over the limit, and not forced."""
        return self.over and not self.forced

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "refused": self.refused}


@dataclass
class KnowledgeBaseReport:
    name: str
    changes: list[Change] = field(default_factory=list)
    fingerprint_changes: list[str] = field(default_factory=list)
    aborted: str | None = None
    rebuild: Rebuild | None = None
    live_collection: str = ""
    #: What produces the vectors, described (``_settings``): this pipeline's, and the one
    #: most of the live documents were indexed by (``None`` when they predate described settings).
    settings: dict[str, Any] = field(default_factory=dict)
    previous_settings: dict[str, Any] | None = None
    #: The changed settings of the parts in ``fingerprint_changes``: (dotted path, old, new).
    #: Empty when ``previous_settings`` is unknown: then only the parts are named.
    setting_changes: list[SettingChange] = field(default_factory=list)
    #: ``None`` when the run deletes nothing by design (prune off, a shard).
    deletion_guard: DeletionGuard | None = None
    #: What a dry run found the run would write, over the files it would add, update or
    #: repair, each parsed and chunked as the run would: chunks and bytes.
    chunks_to_embed: int = 0
    bytes_to_embed: int = 0
    embedding_model: str = ""
    price_per_million_tokens: float | None = None
    #: Where the written chunks' vectors came from: the model, the stored version
    #: (an edit re-embeds only what changed), the embedding cache.
    vectors: VectorCounts = field(default_factory=VectorCounts)
    #: Each source that matched no file, with its patterns:
    #: ``"source docs (include *.md) matched no file"``.
    unmatched_sources: list[str] = field(default_factory=list)
    #: Set when a source matched no file and the collection does not exist yet: the
    #: run writes nothing, and fails, rather than create an empty knowledge base.
    no_files: str | None = None

    def count(self, action: Action) -> int:
        return sum(1 for change in self.changes if change.action == action)

    @property
    def failures(self) -> int:
        return sum(1 for change in self.changes if change.failed)

    @property
    def failed(self) -> bool:
        """Whether this knowledge base failed the run: a file, an abort, no files, a blocked switch."""
        return bool(
            self.failures
            or self.aborted
            or self.no_files
            or (self.rebuild and self.rebuild.blocked)
        )

    @property
    def remembered(self) -> int:
        """Files reported as an earlier run found them, not parsed again."""
        return sum(1 for change in self.changes if change.remembered)

    @property
    def chunks(self) -> int:
        return sum(change.chunks for change in self.changes)

    @property
    def truncated(self) -> int:
        return sum(change.truncated for change in self.changes)

    @property
    def pending(self) -> bool:
        if self.rebuild is not None and not self.rebuild.switched:
            return True
        return any(c.action in ("add", "update", "repair", "delete") for c in self.changes)

    @property
    def refused(self) -> bool:
        """Whether the deletion guard refused (a dry run with ``report_refusal`` says so here)."""
        return self.deletion_guard is not None and self.deletion_guard.refused

    def as_dict(self) -> dict[str, Any]:
        counts = {
            a: self.count(a)
            for a in (
                "add",
                "update",
                "repair",
                "delete",
                "unchanged",
                "keep",
                "unsupported",
                "empty",
                "skipped",
                "failed",
                "unreadable",
            )
        }
        return {
            "name": self.name,
            "counts": counts,
            "chunks_written": self.chunks,
            "remembered": self.remembered,
            "chunks_truncated": self.truncated,
            "vectors": self.vectors.as_dict(),
            "fingerprint_changes": self.fingerprint_changes,
            "setting_changes": [
                {"setting": path, "old": old, "new": new} for path, old, new in self.setting_changes
            ],
            "deletion_guard": self.deletion_guard.as_dict() if self.deletion_guard else None,
            "chunks_to_embed": self.chunks_to_embed,
            "bytes_to_embed": self.bytes_to_embed,
            "embedding_model": self.embedding_model,
            "price_per_million_tokens": self.price_per_million_tokens,
            "aborted": self.aborted,
            "unmatched_sources": self.unmatched_sources,
            "no_files": self.no_files,
            "live_collection": self.live_collection,
            "rebuild": self.rebuild.as_dict() if self.rebuild else None,
            "changes": [asdict(c) for c in self.changes],
        }


@dataclass
class RunReport:
    knowledge_bases: list[KnowledgeBaseReport]
    seconds: float
    dry_run: bool

    @property
    def failed(self) -> bool:
        return any(kb.failed for kb in self.knowledge_bases)

    @property
    def pending(self) -> bool:
        return any(kb.pending for kb in self.knowledge_bases)

    @property
    def refused(self) -> bool:
        return any(kb.refused for kb in self.knowledge_bases)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "seconds": round(self.seconds, 3),
            "failed": self.failed,
            "knowledge_bases": [kb.as_dict() for kb in self.knowledge_bases],
        }


@dataclass(frozen=True)
class RunOptions:
    """How a run behaves beyond what the pipeline file says."""

    dry_run: bool = False
    prune: bool | None = None  # None: the knowledge base's own `prune`
    force: bool = False  # go past the mass-deletion guard
    on_fingerprint_change: Literal["reindex", "refuse"] = "reindex"
    repair: bool = True
    # A change of what makes the vectors rebuilds beside the live collection and
    # switches; off, the live one is compared with the sources as it is (`verify`).
    beside: bool = True
    workers: int | None = None  # parser processes; 0 parses in this process
    executor: str | None = None  # a registered executor type, with its defaults: not `execution`'s
    max_bytes_in_flight: int = 64 << 20  # the files held at once, by size (a larger one goes alone)
    # (index, count), index from 0: only the documents whose id falls in this shard
    # (N CI jobs index one corpus side by side), and no prune: a shard sees a part.
    shard: tuple[int, int] | None = None
    prune_only: bool = False  # only prune and its guard: the step after every shard has run
    # Take over the documents of the sources' files that no run wrote (AgentScope's
    # KnowledgeBase, the API) instead of stopping: see _adopt.
    adopt: bool = False
    # Parse again the files remembered as yielding nothing (failed, empty, skipped),
    # which a run otherwise reports as they were until the file or the pipeline changes.
    retry_failed: bool = False
    # A dry run whose mass-deletion guard refuses goes on and says so in its report
    # (`deletion_guard`, `refused`) instead of raising RunRefused: a plan can then show
    # everything else too. A run that writes always raises.
    report_refusal: bool = False
    progress: Callable[[str, Change], None] | None = None  # each file's change, as it is decided
    files_found: Callable[[str, int], None] | None = None  # a knowledge base's file count, first


def fingerprint(plan: IndexingPlan) -> dict[str, str]:
    """What produced a knowledge base's vectors; a change means they must be made again.

    One short digest per part, so a change can be named without every chunk
    carrying the whole description.
    """
    chunker = {"type": plan.spec.chunker.type, **plan.chunker.parameters.fingerprint_settings()}
    parsers = [
        {"type": block.type, **parser.parameters.fingerprint_settings()}
        for block, parser in zip(plan.spec.parsers, plan.parsers, strict=True)
    ]
    parts: dict[str, Any] = {"chunker": chunker, "parsers": parsers}
    retrieval = plan.knowledge_base.retrieval
    if retrieval.lexical:  # absent in dense mode, so dense fingerprints stay as they were
        parts["lexical"] = retrieval.index_settings()
    prints = {
        name: hashlib.sha256(json.dumps(part, sort_keys=True).encode()).hexdigest()[:16]
        for name, part in parts.items()
    }
    return {"embedding": vectors_digest(plan.knowledge_base.embedding_model), **prints}


def _revision(file_hash: str, prints: dict[str, str]) -> str:
    key = file_hash + json.dumps(prints, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _complete(state: dict[str, Any]) -> bool:
    """Whether ``state`` is a chunk 0's whole state, not a later chunk's revision alone."""
    return "content_hash" in state


def _changed_fields(old: dict[str, Any], new: dict[str, str]) -> list[str]:
    return sorted(key for key in new if old.get(key) != new[key])


async def run(
    built: BuiltPipeline, only: list[str] | None = None, options: RunOptions = RunOptions()
) -> RunReport:
    """Bring each knowledge base in line with its sources (or, with ``dry_run``, say what would change)."""
    started = time.perf_counter()
    reports = []
    chosen = [plan for name, plan in built.indexing.items() if only is None or name in only]
    executor = built.executor
    if options.executor is not None and options.executor != built.spec.execution.type:
        executor = cast(ExecutorBase, default_registry().get("executor", options.executor).cls())
    processes = None if options.dry_run else executor.start(chosen, options.workers)
    # A dry run parses in this process the files a run would write.
    concurrency = processes.files_in_flight if processes is not None else 4
    budget = ByteBudget(options.max_bytes_in_flight)
    # What exists before the run (imported modules, the caller's objects) is
    # not the run's garbage: the collector's full passes, which grow with the
    # store's in-process points, skip it. Left alone when the caller freezes.
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    cached = _embedding_through(built.embedding_cache, chosen)
    try:
        for plan in chosen:
            with observed("run", knowledge_base=plan.knowledge_base.name):
                reports.append(
                    await _run_knowledge_base(plan, built, options, processes, concurrency, budget)
                )
    finally:
        if freeze:
            gc.unfreeze()
        if processes is not None:
            processes.shutdown()
        for model in cached:
            model.embedding_cache = None
    return RunReport(reports, time.perf_counter() - started, options.dry_run)


def _embedding_through(
    cache: EmbeddingCacheBase | None, plans: list[IndexingPlan]
) -> list[EmbeddingModelBase]:
    """Give the plans' models without a cache of their own ``cache``, for a run; return them.

    Set on the model, it travels with it wherever the model embeds: this
    process, the parser processes (a ``cpu_bound`` model) and Ray's tasks.
    """
    if cache is None:
        return []
    models = {
        id(plan.knowledge_base.embedding_model): plan.knowledge_base.embedding_model
        for plan in plans
    }
    uncached = [model for model in models.values() if model.embedding_cache is None]
    for model in uncached:
        model.embedding_cache = cache
    return uncached


async def _run_knowledge_base(
    plan: IndexingPlan,
    built: BuiltPipeline,
    options: RunOptions,
    processes: StartedExecutor | None,
    concurrency: int,
    budget: ByteBudget,
) -> KnowledgeBaseReport:
    kb = plan.knowledge_base
    report = KnowledgeBaseReport(kb.name)
    prints = fingerprint(plan)
    report.settings = settings = described_settings(plan)
    report.embedding_model = kb.embedding_model.model
    report.price_per_million_tokens = getattr(
        kb.embedding_model.parameters, "price_per_million_tokens", None
    )
    # Walked in a thread: a server refreshing keeps answering meanwhile (``_YIELD_EVERY``).
    files = await asyncio.to_thread(lambda: list(discover(plan.spec, built.folder)))
    pointer = await kb.read_pointer()
    if pointer is not None and pointer.retiring and not options.dry_run:
        await retire(kb, pointer)  # a run killed between its switch and the deletions
        pointer = await kb.read_pointer()
    live = pointer.live.collection if pointer is not None else kb.collection
    memory = pointer.yielded_nothing if pointer is not None else {}
    # What this run learns of the files it reaches that yield nothing (``_yielded_nothing``).
    found_nothing: dict[str, Remembered] = {}
    reached: set[str] = set()
    report.live_collection = live
    live_documents = await _documents(kb.pinned(live))
    adoption = Adoption(find_foreign(kb.name, live_documents.values(), files))
    if adoption.matched and not options.dry_run:
        if not options.adopt:
            raise RunRefused(adoption.refusal(kb.name, live))
        for foreign in adoption.matched:
            own_id, reason = await adopt(
                kb.pinned(live), foreign, lambda data: _revision(content_hash(data), prints)
            )
            adoption.adopted[own_id] = reason
        live_documents = await _documents(kb.pinned(live))
    report.changes.extend(
        Change("foreign", foreign.path, foreign.summary.document_id, _foreign_reason(foreign))
        for foreign in adoption.found
        if foreign.summary.document_id in live_documents
    )
    matched = {id(file.source) for file in files}
    report.unmatched_sources = [
        _unmatched(source) for source in plan.spec.sources if id(source) not in matched
    ]
    if report.unmatched_sources and not await kb.vector_store.has_collection(live):
        # A first run that would build from a part of its sources, or from none (a
        # pattern that finds nothing, an empty checkout), fails before writing. For an
        # existing collection it is a warning: what the files' absence deletes is the
        # deletion guard's to judge.
        report.no_files = f"nothing written: collection {live} does not exist yet"
        return report
    wanted = {document_id(kb.name, f.origin, f.relative): f for f in files}
    own = writer(plan.spec, built.pipeline_file)
    # Another writer's documents (a knowledge base of another file sharing the collection
    # and scope) are reported and never touched: not pruned, updated or repaired.
    others = {
        doc_id: name
        for doc_id, summary in live_documents.items()
        if _state(summary)
        and doc_id not in wanted
        and (name := other_writer(summary, kb.name, own)) is not None
    }
    for doc_id, name in others.items():
        path = _state(live_documents[doc_id]).get("path", live_documents[doc_id].source)
        report.changes.append(Change("foreign", path, doc_id, shared_reason(name, live)))
    managed = {
        doc_id: s for doc_id, s in live_documents.items() if _state(s) and doc_id not in others
    }
    todo = {
        doc_id: file
        for doc_id, file in wanted.items()
        if not options.prune_only and in_shard(doc_id, options.shard)
    }
    if options.files_found:
        options.files_found(kb.name, len(todo))

    stale_prints = {
        field_name
        for summary in managed.values()
        if summary.document_id in wanted and _complete(_state(summary))
        for field_name in _changed_fields(_state(summary)["fingerprint"], prints)
    }
    report.fingerprint_changes = sorted(stale_prints)
    report.previous_settings = most_common_settings(
        _state(summary)
        for summary in managed.values()
        if summary.document_id in wanted and _complete(_state(summary))
    )
    if stale_prints and report.previous_settings is not None:
        report.setting_changes = setting_changes(report.previous_settings, settings, stale_prints)
    if stale_prints and options.on_fingerprint_change == "refuse":
        raise RunRefused(
            f"{kb.name}: the pipeline changed what produces the vectors ({', '.join(sorted(stale_prints))}); "
            "re-run without --refuse-on-fingerprint-change to re-index every document"
        )

    reasons = await rebuild_reasons(kb, live, stale_prints) if options.beside else []
    if reasons:
        target = kept_target(kb, pointer, prints)
        write_kb = kb.pinned(target)
        existing = await _documents(write_kb)
        report.rebuild = Rebuild(
            live,
            target,
            reasons,
            chunks_to_embed=sum(
                summary.chunk_count
                for doc_id, summary in managed.items()
                if doc_id in wanted and not (doc_id in existing and complete(existing[doc_id]))
            ),
            kept=pointer is not None and any(g.collection == target for g in pointer.generations),
        )
        if others:
            # The switch would move the other writer's knowledge base to a collection
            # without its documents, and retiring the old one would delete them.
            shared = (
                f"collection {live} holds {len(others)} document(s) of another writer "
                f"({min(others.values())}) in this scope, which a switch would leave behind; "
                "give each knowledge base its own metadata_filter (or collection)"
            )
            if not options.dry_run:
                raise RunRefused(f"{kb.name}: not rebuilding beside {live}: {shared}")
            report.rebuild.blocked = f"{shared}; the live collection {live} would stay live"
        if not options.dry_run:
            await begin(kb, pointer, report.rebuild, prints, live_documents.values())
        rebuilt_because = f"pipeline changed: {', '.join(reasons)}"
    else:
        write_kb = kb.pinned(live)
        existing = live_documents

    # In place, a document whose file is gone is deleted when pruning; a rebuild
    # carries only the files it finds, and clears what an earlier attempt left of others.
    prune = (plan.spec.prune if options.prune is None else options.prune) and not options.shard
    gone = [
        s
        for doc_id, s in managed.items()
        if doc_id not in wanted and in_shard(doc_id, options.shard)
    ]
    if prune or report.rebuild:
        guard = DeletionGuard(
            len(gone), len(managed), plan.spec.max_delete_fraction, forced=options.force
        )
        report.deletion_guard = guard
        if guard.refused and not (options.dry_run and options.report_refusal):
            raise RunRefused(
                f"{kb.name}: the run would delete {len(gone)} of {len(managed)} documents "
                f"({guard.share:.0%}, more than max_delete_fraction {guard.max_fraction:.0%}); "
                "check the sources (a moved folder or an empty checkout?); "
                "`ragflow-config plan --force` lists what would be deleted, and `--force` "
                "deletes it"
            )
        refusing = not options.force and not (options.dry_run and options.report_refusal)
        if refusing and (emptied := _remote_source_over(gone, managed, guard)):
            raise RunRefused(f"{kb.name}: {emptied}; check the source or pass --force")

    def finish(change: Change) -> None:
        report.changes.append(change)
        if options.progress:
            options.progress(kb.name, change)
        if change.failed and plan.spec.on_error == "fail":
            raise _Abort(f"{change.path}: {change.reason}")

    def live_version(doc_id: str) -> _LiveVersion | None:
        """In a rebuild, the document's live version, whose vectors it may reuse."""
        summary = live_documents.get(doc_id)
        if report.rebuild is None or summary is None or doc_id in others:
            return None
        return _LiveVersion(live, summary)

    async def process(doc_id: str, file: SourceFile, size: int) -> Change:
        if (
            unchanged := _unchanged_by_version(doc_id, file, existing, prints, options)
        ) is not None:
            return unchanged  # a remote file whose own marker is the stored one: not fetched
        # A thread hop costs more than reading a small local file; only large ones leave the loop.
        try:
            inline = file.reads_quickly and size <= _READ_INLINE_BYTES
            data = file.read() if inline else await asyncio.to_thread(file.read)
        except OSError as exc:
            return _unreadable(file, doc_id, exc)
        digest = content_hash(data)
        change = _decide(doc_id, file, digest, existing.get(doc_id), prints, options)
        revision = _revision(digest, prints)
        known = memory.get(doc_id)
        if (
            known is not None
            and known.revision == revision
            and not options.retry_failed
            and change.action in ("add", "update", "repair")
        ):
            found_nothing[doc_id] = known
            return Change(known.action, file.relative, doc_id, known.reason, remembered=True)
        if doc_id in adoption.adopted:
            change = replace(change, reason=adoption.adopted[doc_id])
        if report.rebuild and change.action == "add" and doc_id in managed:
            change = Change("update", file.relative, doc_id, rebuilt_because)
        writes = change.action in ("add", "update", "repair") and not options.dry_run
        ahead.decided(writes)
        if writes:
            with observed("file", knowledge_base=kb.name, path=file.relative):
                change = await _write(
                    plan,
                    write_kb,
                    change,
                    file,
                    data,
                    digest,
                    prints,
                    settings,
                    own,
                    existing.get(doc_id),
                    processes,
                    ahead.files(),
                    report.vectors,
                    live=live_version(doc_id),
                )
        elif change.action in ("add", "update", "repair"):
            # A dry run parses what the run would write, as the run would: a file the
            # pipeline skips (empty, unsupported) or fails to parse is reported as the
            # run reports it (an edit that fails keeps its old version: no drift), and
            # the chunks counted are those the run would write.
            stored = doc_id in existing
            outcome = await _prepare(plan, change, file, data, None, 0, stored=stored)
            if isinstance(outcome, Change):
                change = outcome
            else:
                report.chunks_to_embed += len(outcome.chunks)
                report.bytes_to_embed += len(data)
        if change.action in REMEMBERED:
            found_nothing[doc_id] = remembered(
                file.relative, revision, change.action, change.reason
            )
        return change

    # A fixed set of tasks shares one iterator over the files, so a run holds
    # `concurrency` files' work at a time (and at most the budget's bytes of
    # them), not a waiting task per file.
    queue = iter(todo.items())
    ahead = _Ahead(len(todo))

    async def take_files() -> None:
        for taken, (doc_id, file) in enumerate(queue, 1):
            if taken % _YIELD_EVERY == 0:
                await asyncio.sleep(0)
            ahead.reached += 1
            reached.add(doc_id)
            try:
                size = file.size()
            except OSError as exc:  # gone since it was listed, or not ours to read
                finish(_unreadable(file, doc_id, exc))
                continue
            if size > plan.spec.max_file_bytes:
                finish(_too_large(file, doc_id, size, plan.spec.max_file_bytes))
                continue
            async with budget.hold(size):
                finish(_sized(await process(doc_id, file, size), file, size))

    tasks = [asyncio.create_task(take_files()) for _ in range(min(concurrency, len(todo)))]
    try:
        await asyncio.gather(*tasks)
    except _Abort as abort:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        report.aborted = str(abort)
        if report.rebuild:
            report.rebuild.blocked = "the run stopped at a failure"
        if not options.dry_run:
            await remember(kb, live, _learnt(memory, found_nothing, reached, wanted), prints)
        return _sorted(report)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise

    for summary in gone:
        path = _state(summary).get("path", summary.source)
        if report.rebuild:
            change = Change(
                "delete",
                path,
                summary.document_id,
                "source file is gone: a rebuild carries only the files it finds",
            )
        elif prune:
            if not options.dry_run:
                await write_kb.delete_document(summary.document_id)
            change = Change("delete", path, summary.document_id, _gone(summary))
        elif options.shard:
            reason = "source file is gone; a shard leaves pruning to `run --prune-only`"
            change = Change("keep", path, summary.document_id, reason)
        else:
            change = Change("keep", path, summary.document_id, "source file is gone; prune is off")
        report.changes.append(change)
        if options.progress:
            options.progress(kb.name, change)
    if report.rebuild and options.dry_run:
        # What the run would embed and decide, as the plan parsed the files.
        report.rebuild.chunks_to_embed = report.chunks_to_embed
        refusal = _failed_files(plan, report, len(wanted)).refusal(managed)
        if refusal is not None and report.rebuild.blocked is None:
            report.rebuild.blocked = f"{refusal}; the live collection {live} would stay live"
    elif report.rebuild:
        empty_live = not live_documents  # nothing in scope, of any writer
        await _finish_rebuild(
            plan, write_kb, report, report.rebuild, prints, wanted, managed, options, empty_live
        )
    if not options.dry_run:
        await remember(kb, live, _learnt(memory, found_nothing, reached, wanted), prints)
    return _sorted(report)


def _learnt(
    memory: dict[str, Remembered],
    found: dict[str, Remembered],
    reached: set[str],
    wanted: dict[str, SourceFile],
) -> dict[str, Remembered]:
    """The files to remember as yielding nothing after a run: those it found so, and those
    remembered before that it did not reach (another shard's, say) and whose file is still there."""
    unreached = {
        doc_id: entry
        for doc_id, entry in memory.items()
        if doc_id in wanted and doc_id not in reached
    }
    return {**unreached, **found}


def _failed_files(plan: IndexingPlan, report: KnowledgeBaseReport, files: int) -> FailedFiles:
    failed = {c.document_id: c.path for c in report.changes if c.failed}
    return FailedFiles(failed, files, plan.spec.max_failed_fraction)


async def _documents(kb: KnowledgeBase) -> dict[str, DocumentSummary]:
    """The documents of ``kb``'s scope in its (pinned) collection, by id, whatever vectors
    it was built for; none when it does not exist, which this does not create."""
    store, collection = kb.vector_store, await kb.live_collection()
    if not await store.has_collection(collection):
        return {}
    return {s.document_id: s for s in await store.list_documents(collection, kb.metadata_filter)}


async def _finish_rebuild(
    plan: IndexingPlan,
    write_kb: KnowledgeBase,
    report: KnowledgeBaseReport,
    rebuild: Rebuild,
    prints: dict[str, str],
    wanted: dict[str, SourceFile],
    live_documents: dict[str, DocumentSummary],
    options: RunOptions,
    empty_live: bool,
) -> None:
    """Clear what the rebuilt collection holds of gone files, check it, and switch to it
    (``empty_live``: dropping the live collection, which holds nothing in scope)."""
    kb = plan.knowledge_base
    built = {s.document_id: s for s in await write_kb.list_documents()}
    for doc_id in [doc_id for doc_id in built if doc_id not in wanted]:
        await write_kb.delete_document(doc_id)
        del built[doc_id]
    if options.shard:
        rebuild.waiting = "a shard builds a part: `run --prune-only` switches once every shard ran"
        return
    failed = _failed_files(plan, report, len(wanted))
    refusal = failed.refusal(live_documents)
    if refusal is not None:
        rebuild.blocked = f"{refusal}; the live collection {rebuild.live} stays live"
        count = len(failed.failed)
        await leave_unswitched(kb, rebuild, f"{count} file{'' if count == 1 else 's'} failed")
        return
    skipped = {
        c.document_id for c in report.changes if c.action in ("unsupported", "empty", "skipped")
    }
    problem = check(built, live_documents, wanted, skipped | set(failed.failed), prints)
    if problem is not None:
        rebuild.blocked = f"{problem}; the live collection {rebuild.live} stays live"
        await leave_unswitched(kb, rebuild, problem)
        return
    await switch(kb, rebuild, plan.spec.keep_previous, empty_live=empty_live)


def in_shard(doc_id: str, shard: tuple[int, int] | None) -> bool:
    """Whether a document belongs to ``shard``: by its id, the same on every machine and run."""
    if shard is None:
        return True
    index, count = shard
    return int(hashlib.sha256(doc_id.encode()).hexdigest()[:8], 16) % count == index


class _Abort(Exception):
    pass


@dataclass
class _Ahead:
    """How many of the files not yet reached will need writing, judged by the recent share.

    Recent, not overall: changes come in clusters (a new folder, an edited
    subtree), and a run should see one as soon as it reaches it.
    """

    total: int
    reached: int = 0
    recent: deque[bool] = field(default_factory=lambda: deque(maxlen=64))

    def decided(self, writes: bool) -> None:
        self.recent.append(writes)

    def files(self) -> int:
        left = self.total - self.reached
        return left * sum(self.recent) // len(self.recent) if self.recent else left


def _foreign_reason(foreign: Foreign) -> str:
    written = "written outside runs (by AgentScope's KnowledgeBase or the API)"
    if foreign.file is None:
        return f"{written}; no source file matches it: `run --adopt` leaves it, `delete` removes it"
    return f"{written}: `run --adopt` takes it over as {foreign.file.relative}"


def _unmatched(source: SourceSpec) -> str:
    patterns = f"include {', '.join(source.include)}"
    if source.exclude:
        patterns += f"; exclude {', '.join(source.exclude)}"
    return f"source {source_kind(source).origin(source)} ({patterns}) matched no file"


def _remote_source_over(
    gone: list[DocumentSummary], managed: dict[str, DocumentSummary], guard: DeletionGuard
) -> str | None:
    """Why a remote source would lose more than ``max_delete_fraction`` of its own documents,
    or None: a bucket's prefix emptied must not hide behind the other sources' documents.

    Remote sources only (their documents record a version marker): a local folder's share
    is judged with the knowledge base's, as it always was.
    """
    remote = [s for s in managed.values() if "version" in _state(s)]
    held = Counter(_state(s).get("source") for s in remote)
    losing = Counter(_state(s).get("source") for s in gone if "version" in _state(s))
    for source, deleting in sorted(losing.items()):
        share = deleting / held[source]
        if share > guard.max_fraction:
            return (
                f"the run would delete {deleting} of the {held[source]} documents of source "
                f"{source} ({share:.0%}, more than max_delete_fraction {guard.max_fraction:.0%})"
            )
    return None


def _sized(change: Change, file: SourceFile, size: int) -> Change:
    """A remote file's change with its size in the reason, so a plan shows what it fetches."""
    if file.version is None or change.action not in ("add", "update", "repair"):
        return change
    return replace(change, reason=f"{change.reason}; {size:,} bytes")


def _gone(summary: DocumentSummary) -> str:
    """Why a gone file's document is deleted; a remote one's with its size, for the plan."""
    state = _state(summary)
    if "version" in state and isinstance(state.get("size_bytes"), int):
        return f"source file is gone; {state['size_bytes']:,} bytes"
    return "source file is gone"


def _unreadable(file: SourceFile, doc_id: str, exc: OSError) -> Change:
    """A file that cannot be read fails alone; what the store holds of it stays."""
    return Change(
        "unreadable", file.relative, doc_id, f"cannot read the file: {exc.strerror or exc}"
    )


def _too_large(file: SourceFile, doc_id: str, size: int, limit: int) -> Change:
    """Skipped before it is read; what the store holds of it stays, as for any unsupported file."""
    reason = f"{size:,} bytes, more than max_file_bytes ({limit:,}); raise it to index the file"
    return Change("unsupported", file.relative, doc_id, reason)


def _sorted(report: KnowledgeBaseReport) -> KnowledgeBaseReport:
    report.changes.sort(key=lambda change: (change.path, change.action))
    return report


def _decide(
    doc_id: str,
    file: SourceFile,
    digest: str,
    summary: DocumentSummary | None,
    prints: dict[str, str],
    options: RunOptions,
) -> Change:
    if summary is None:
        return Change("add", file.relative, doc_id, "new file")
    state = _state(summary)
    if not state:
        return Change("repair", file.relative, doc_id, "stored without ragflow state")
    if not _complete(state):
        return Change(
            "repair", file.relative, doc_id, "chunk 0 is missing: a write was interrupted"
        )
    if state.get("content_hash") != digest:
        return Change("update", file.relative, doc_id, "content changed")
    changed = _changed_fields(state.get("fingerprint", {}), prints)
    if changed:
        return Change("update", file.relative, doc_id, f"pipeline changed: {', '.join(changed)}")
    if file.version is not None and state.get("version") != file.version:
        # Written again with the new marker, so the next run need not fetch it; its
        # vectors are the stored ones (same text, same fingerprint), nothing is embedded.
        return Change(
            "update", file.relative, doc_id, "the source's version changed, its content did not"
        )
    if options.repair and state.get("chunks") != summary.chunk_count:
        return Change(
            "repair",
            file.relative,
            doc_id,
            f"store holds {summary.chunk_count} chunks, expected {state.get('chunks')}",
        )
    return Change("unchanged", file.relative, doc_id)


def _unchanged_by_version(
    doc_id: str,
    file: SourceFile,
    existing: dict[str, DocumentSummary],
    prints: dict[str, str],
    options: RunOptions,
) -> Change | None:
    """The unchanged verdict of a file whose source's version marker is the stored one, else
    None (it must be read to decide). The marker vouches for the stored content hash."""
    summary = existing.get(doc_id)
    state = _state(summary) if summary is not None else {}
    if file.version is None or state.get("version") != file.version or not _complete(state):
        return None
    change = _decide(doc_id, file, state["content_hash"], summary, prints, options)
    return change if change.action == "unchanged" else None


@dataclass
class _Prepared:
    """A file parsed and chunked (and embedded, when its model ran in a parser process)."""

    media_type: str | None
    chunks: list[Chunk]
    embedded: EmbeddingResponse | None
    truncated: int


async def _prepare(
    plan: IndexingPlan,
    change: Change,
    file: SourceFile,
    data: bytes,
    processes: StartedExecutor | None,
    files_ahead: int,
    *,
    stored: bool = False,
) -> _Prepared | Change:
    """The file's embeddable chunks, or the change that ends its story: unsupported, failed,
    empty, skipped. ``stored``: whether the collection written to holds a version of it."""
    kb = plan.knowledge_base
    media_type = file.media_type or detect(file.relative, data)
    parser = next((p for p in plan.parsers if media_type in p.supported_media_types), None)
    if parser is None:
        return Change(
            "unsupported",
            file.relative,
            change.document_id,
            f"no parser for {media_type}"
            if media_type
            else "unknown file type: binary content, and no parser claims its extension",
        )
    # A model that holds the GIL while it embeds runs in the parser processes, beside the
    # parsing; any model does when the executor has an embedding stage of its own (Ray's).
    stage = processes is not None and processes.embeds_every_model
    model = kb.embedding_model if kb.embedding_model.cpu_bound or stage else None
    embedded: EmbeddingResponse | None = None
    try:
        if processes is None:
            chunks = await parse_and_chunk(parser, plan.chunker, data, file.relative)
        else:
            # Parsed, chunked (and embedded, with a cpu_bound model) in a parser process,
            # which has no tracer: one step here, as long as the file's wait for it.
            with observed("prepare", knowledge_base=kb.name, path=file.relative):
                chunks, embedded = await processes.prepare(
                    parser, plan.chunker, model, data, file.relative, backlog=files_ahead
                )
    except ParserError as exc:
        return Change("failed", file.relative, change.document_id, exc.cause)
    except Exception as exc:  # a parser's own bug must not end the run; report it
        return Change("failed", file.relative, change.document_id, f"{type(exc).__name__}: {exc}")
    if not stored and chunks and not any(_embeds(kb, c) for c in chunks):
        # Reported here, once per command, rather than warned about by the knowledge
        # base: nothing is stored for it, so every run finds it new and parses it again.
        # A rebuild for a text-only model skips it too, and switches without it.
        return Change("skipped", file.relative, change.document_id, _text_only(kb, parser))
    chunks = kb.embeddable_chunks(chunks)  # names the images of a file indexed in part
    if not chunks and change.action == "add":
        # Nothing is stored for it, so every run finds it new: say why instead.
        return Change("empty", file.relative, change.document_id, "nothing to index in the file")
    texts = [chunk.content.text for chunk in chunks if isinstance(chunk.content, TextBlock)]
    truncated = kb.embedding_model.count_truncated(texts) or 0
    return _Prepared(media_type, chunks, embedded, truncated)


def _embeds(kb: KnowledgeBase, chunk: Chunk) -> bool:
    return kb.embedding_model.can_embed(chunk.content)


def _text_only(kb: KnowledgeBase, parser: ParserBase) -> str:
    """Why a file of images only is skipped, and what would index it."""
    why = f"the model embeds text only ({kb.embedding_model.model})"
    ocr = getattr(parser.parameters, "ocr", None)
    if ocr == "never":
        return f"{why}; turn on OCR (`ocr: auto` on the parser) or use a multimodal model"
    if ocr is not None:
        return f"{why} and OCR found no text in it; a multimodal model would embed it"
    return f"{why}; a multimodal model would embed it"


async def _write(
    plan: IndexingPlan,
    kb: KnowledgeBase,
    change: Change,
    file: SourceFile,
    data: bytes,
    digest: str,
    prints: dict[str, str],
    settings: dict[str, Any],
    own: str,
    previous: DocumentSummary | None,
    processes: StartedExecutor | None,
    files_ahead: int,
    counts: VectorCounts,
    live: _LiveVersion | None = None,
) -> Change:
    """Write a file's new version; ``prints`` and ``settings`` describe the pipeline,
    ``own`` is its writer, ``counts`` gains where its vectors came from. ``live``: in a
    rebuild, the document's version in the live collection, whose vectors it may reuse."""
    prepared = await _prepare(
        plan, change, file, data, processes, files_ahead, stored=previous is not None
    )
    if isinstance(prepared, Change):
        return prepared
    media_type, chunks, embedded = prepared.media_type, prepared.chunks, prepared.embedded
    vectors = None if embedded is None else embedded.embeddings
    if embedded is not None:
        counts.count(len(vectors or ()), embedded.cache_hits, embedded.cache_misses)
    revision = _revision(digest, prints)
    if chunks:
        # The whole state rides on chunk 0, which is written last; every chunk
        # carries the revision, which is how an update finds the old version's leftovers.
        state = {
            "path": file.relative,
            "source": file.origin,
            "content_hash": digest,
            "media_type": media_type,
            "size_bytes": len(data),
            # A remote file's own version marker (ETag, blob id): the next run compares it
            # with the listing's before fetching. Absent for local files.
            **({"version": file.version} if file.version is not None else {}),
            "revision": revision,
            "chunks": len(chunks),
            "fingerprint": prints,
            # Described beside the digests, never digested: what a plan names as changed.
            "settings": settings,
            WRITER_KEY: own,
        }
        chunks[0] = chunks[0].model_copy(
            update={"metadata": {**chunks[0].metadata, STATE_KEY: state}}
        )
    metadata = {**file.source.metadata, STATE_KEY: {"revision": revision}}
    old_state = _state(previous) if previous else {}
    old_revision = old_state.get("revision")
    reuse: dict[str, list[float]] = {}
    if chunks and vectors is None and live is not None:
        reuse = await _live_vectors(kb, live, prints)
    if chunks and vectors is None and previous is not None:
        # Read before anything of the old version is withdrawn or deleted.
        reuse |= await _reusable_vectors(kb, change.document_id, revision, old_state, prints)
    if change.action == "repair" or (previous is not None and not chunks):
        await kb.delete_document(change.document_id)
    elif change.action == "update" and previous is not None and previous.chunk_count > 1:
        # Overwriting in place, a kill would leave the old chunk 0, whose state
        # vouches for the old version, beside some new chunks: if the file then
        # went back to its old content, the mix would pass as that version.
        # Withdrawn first, its absence marks the write as interrupted, while the
        # old version's other chunks stay searchable until overwritten.
        old_chunk_0 = {"revision": old_revision, "content_hash": old_state["content_hash"]}
        await kb.delete_document(change.document_id, where={STATE_KEY: old_chunk_0})
    if chunks:
        try:
            await kb.insert_document(
                chunks,
                document_id=change.document_id,
                document_metadata=metadata,
                embeddings=vectors,
                reuse=reuse,
                counts=counts,
            )
        except UnstorableDocumentError as exc:
            return Change("failed", file.relative, change.document_id, exc.cause)
    if change.action == "update" and old_revision and old_revision != revision and chunks:
        await kb.delete_document(change.document_id, where={STATE_KEY: {"revision": old_revision}})
    return Change(
        change.action,
        file.relative,
        change.document_id,
        change.reason,
        len(chunks),
        prepared.truncated,
    )


async def _reusable_vectors(
    kb: KnowledgeBase,
    document_id: str,
    revision: str,
    old_state: dict[str, Any],
    prints: dict[str, str],
) -> dict[str, list[float]]:
    """Stored vectors of a document's chunks, by text, that this pipeline would make again.

    Only from chunks of a version embedded as ``prints`` embeds (same model,
    dimensions and vector settings; a vector is the model's for the chunk's
    text alone, whatever parser or chunker cut it), so a reused vector is the
    one the model would give: the stored version, when its chunk 0 vouches
    for such an embedding, and chunks of ``revision`` itself, which an
    interrupted write of this very version left (a revision digests the
    fingerprint, so they qualify whatever chunk 0 says).
    """
    revisions = {revision}
    if _same_vectors(old_state, prints):
        revisions.add(old_state["revision"])
    # One read of the whole document, sorted out here: a store's filtered read
    # (Qdrant's local mode scans every point) costs the same for one revision as for all.
    return {
        chunk.content.text: vector
        for chunk, vector in await kb.document_vectors(document_id)
        if isinstance(chunk.content, TextBlock) and _state(chunk).get("revision") in revisions
    }


@dataclass(frozen=True)
class _LiveVersion:
    """A document as the live collection holds it, while a rebuild writes it beside."""

    collection: str
    summary: DocumentSummary


async def _live_vectors(
    kb: KnowledgeBase, live: _LiveVersion, prints: dict[str, str]
) -> dict[str, list[float]]:
    """The live version's vectors, by text, when its model embedded as ``prints`` does: a
    rebuild for another chunker or parser then embeds only the texts that changed.

    Read from the store, not through the knowledge base, which would check the live
    collection against this pipeline (a rebuild for a lexical side is one it fails).
    """
    state = _state(live.summary)
    if not _same_vectors(state, prints):
        return {}
    held = await kb.vector_store.document_vectors(
        live.collection, live.summary.document_id, kb.metadata_filter
    )
    return {
        chunk.content.text: vector
        for chunk, vector in held
        if isinstance(chunk.content, TextBlock)
        and _state(chunk).get("revision") == state["revision"]
    }


def _same_vectors(state: dict[str, Any], prints: dict[str, str]) -> bool:
    """Whether a stored version (its chunk 0's ``state``) was embedded as ``prints`` embeds."""
    return _complete(state) and state.get("fingerprint", {}).get("embedding") == prints["embedding"]
