"""One pipeline file at a git ref and in the working tree, each indexed on its own, measured alike.

``eval FILE --against REF`` answers a pull request's question: what does this
change do to retrieval quality? :func:`evaluate_against` does it in five steps.

1. **The commit.** ``git rev-parse --show-toplevel`` from the file's folder
   finds its repository, ``git rev-parse --verify REF^{commit}`` the commit;
   the file must exist there (:class:`AgainstError` otherwise, before anything is
   built).
2. **The repository as it was.** ``git archive`` of the commit is extracted
   into a temporary folder, with an empty ``git init`` at its root so that its
   sources are bounded by it as the working tree's are by the repository. The
   base side loads the file from there, with its sources, parsers' settings,
   everything. Chosen over ``git worktree add``: it writes nothing into the
   repository (no ``.git/worktrees`` entry, no checkout hooks run), and a
   failure leaves nothing to prune: the temporary folder goes in every case.
   ``export-ignore`` attributes apply, as for any archive; Git LFS files are
   their pointers.
3. **Its own index, each side.** Each version's spec is rewritten for the
   evaluation, on the Pydantic objects, not the text: every knowledge base's
   ``collection`` becomes ``<collection>__eval_<version><run>`` (the version:
   the commit's first 8 hex digits, or a digest of the working tree's file;
   the run: 6 random ones, so two jobs evaluating one version at once, two
   pull requests against one main, never share a collection). Both sides, the
   working tree's too: the collection a ``run`` of the file serves (and its
   pointer) is never opened for writing, whichever side is the same as it.
   An embedded store's location (Qdrant's ``path``, a Milvus Lite file, any
   store's ``path`` or ``uri`` that names a local file) moves into the
   temporary folder, one per side: the file's own store is not even opened,
   nor locked (as ``serve`` may hold it), and a base file's absolute path to
   a real store is not followed.
4. **One embedding cache.** Both sides embed through the working-tree file's
   ``embedding_cache`` (its folder resolved beside the working-tree file), so
   the base side costs nothing when it was built before (by a ``run`` of main,
   or an earlier evaluation) and this branch embeds only the texts it
   changed. Without an ``embedding_cache`` in the file, both sides embed
   everything.
5. **Index, measure, drop.** Each side in turn indexes every evaluated
   knowledge base from scratch (the base first), is measured on **this
   branch's** judged queries and ``k`` (a paired comparison needs one query
   set; a pull request that adds queries is measured on them both ways), and
   its collections are dropped, leaving nothing in a server store.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import secrets
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._component import is_path_field
from .._errors import ConfigError, RagflowError
from ..pipeline import Pipeline, RunOptions
from ..pipeline._registry import Registry, default_registry
from ..pipeline._run import run
from ..pipeline._spec import EmbeddingCacheSpec, PipelineSpec, VectorStoreBlock
from ..pipeline._validate import LoadedPipeline, load_pipeline, source_issues
from ._evaluate import evaluate
from ._queries import JudgedQuery, load_queries
from ._results import EvaluationResult

logger = logging.getLogger(__name__)

EVAL_COLLECTION_MARK = "__eval_"
"""What an evaluation's collection name holds after the served collection's name."""

# Parameters that may name where an embedded store keeps its data (Qdrant's `path`,
# Milvus's `uri`); only when they are path fields holding a local path, not a URL.
_LOCATION_FIELDS = ("path", "uri")


class AgainstError(RagflowError):
    """Nothing to compare: no git, no repository, no such commit, no such file in it, or
    no knowledge base to evaluate. Raised before anything is built."""


@dataclass(frozen=True)
class GitVersion:
    """The pipeline file at a commit: the repository, the ref as given, its commit, the file in it."""

    root: Path
    ref: str
    commit: str
    path: str  # relative to root, with forward slashes: what `git` names it by


@dataclass
class AgainstReport:
    """Both sides' results, per knowledge base; ``base`` lacks one that is new in the working tree."""

    version: GitVersion
    base: dict[str, EvaluationResult]
    head: dict[str, EvaluationResult]
    # Side ("base", "head") -> knowledge base -> the collection it was evaluated in.
    collections: dict[str, dict[str, str]] = field(default_factory=dict)
    # Knowledge base -> the working tree's judged queries both sides were measured on.
    queries: dict[str, list[JudgedQuery]] = field(default_factory=dict)


def locate(file: str | Path, ref: str) -> GitVersion:
    """``file``'s repository and ``ref``'s commit; raise :class:`AgainstError` naming what is missing."""
    file = Path(file).resolve()
    if not ref or ref.startswith("-"):
        raise AgainstError(f"{ref!r} is not a git ref")
    top = _git(file.parent, "rev-parse", "--show-toplevel")
    if top.returncode:
        raise AgainstError(f"{file} is not in a git repository; --against {ref} needs one")
    root = Path(top.stdout.decode().strip()).resolve()
    try:
        relative = file.relative_to(root).as_posix()
    except ValueError:
        raise AgainstError(f"{file} is not inside its repository {root}") from None
    found = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode:
        raise AgainstError(
            f"{ref!r} names no commit in {root}; a shallow clone may lack it: fetch it first "
            f"(git fetch origin <branch>, or actions/checkout with fetch-depth: 0)"
        )
    commit = found.stdout.decode().strip()
    kind = _git(root, "cat-file", "-t", f"{commit}:{relative}")
    if kind.returncode or kind.stdout.decode().strip() != "blob":
        raise AgainstError(
            f"{relative} did not exist at {ref} ({commit[:12]}): there is no base version "
            "to compare with; evaluate the file alone (eval FILE)"
        )
    return GitVersion(root, ref, commit, relative)


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, check=False)
    except FileNotFoundError:
        raise AgainstError("--against needs git, which is not installed (or not on PATH)") from None


def materialise(version: GitVersion, into: Path) -> Path:
    """Extract the repository at ``version.commit`` into the folder ``into``; return the file there."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.Popen(
        ["git", "-C", str(version.root), "archive", "--format=tar", version.commit],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert archive.stdout is not None and archive.stderr is not None
    failure = ""
    try:
        with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
            # "tar": no member outside `into`, no device files; symlinks stay as they
            # were committed, and the pipeline's own rules on sources judge them.
            tar.extractall(into, filter="tar")
        # The archive's zero padding after its end marker: unread, git would die of SIGPIPE.
        while archive.stdout.read(1 << 16):
            pass
    except (tarfile.TarError, OSError) as exc:
        failure = str(exc)
    finally:
        archive.stdout.close()
        errors = archive.stderr.read().decode(errors="replace").strip()
        archive.stderr.close()
        archive.wait()
    if archive.returncode or failure:
        raise AgainstError(
            f"cannot extract {version.ref} ({version.commit[:12]}): "
            f"{errors or failure or f'git archive exited with {archive.returncode}'}"
        )
    # A repository root, as the working tree's is: what a source may reach is bounded alike.
    _git(into, "init", "--quiet")
    return into / version.path


def evaluation_spec(
    spec: PipelineSpec,
    *,
    tag: str,
    stores: Path,
    cache: EmbeddingCacheSpec | None,
    registry: Registry,
) -> PipelineSpec:
    """``spec`` rewritten to be evaluated beside what it serves.

    Every collection gets the suffix ``__eval_<tag>``; every embedded store's
    location moves into a folder of ``stores`` (one per named store, one per
    distinct inline block); the embedding cache is ``cache``.
    """
    named = {
        name: _relocated(block, stores / name, registry)
        for name, block in spec.vector_stores.items()
    }
    knowledge_bases = []
    for kb in spec.knowledge_bases:
        update: dict[str, Any] = {"collection": eval_collection(kb.collection, tag)}
        if isinstance(kb.vector_store, VectorStoreBlock):
            digest = hashlib.sha256(kb.vector_store.model_dump_json().encode()).hexdigest()[:12]
            update["vector_store"] = _relocated(
                kb.vector_store, stores / f"inline-{digest}", registry
            )
        knowledge_bases.append(kb.model_copy(update=update))
    return spec.model_copy(
        update={
            "vector_stores": named,
            "knowledge_bases": knowledge_bases,
            "embedding_cache": cache,
        }
    )


def eval_collection(collection: str, tag: str) -> str:
    """The collection an evaluation uses in place of ``collection``."""
    return f"{collection}{EVAL_COLLECTION_MARK}{tag}"


def embedded_locations(spec: PipelineSpec, folder: Path, registry: Registry) -> list[Path]:
    """Where the embedded stores of ``spec`` (a file in ``folder``) keep their data."""
    blocks = [*spec.vector_stores.values()]
    blocks += [
        kb.vector_store for kb in spec.knowledge_bases if not isinstance(kb.vector_store, str)
    ]
    found = []
    for block in blocks:
        for value in _locations(block, registry).values():
            found.append((folder / Path(value).expanduser()).resolve())
    return found


def _locations(block: VectorStoreBlock, registry: Registry) -> dict[str, str]:
    """The block's parameters that name a local file or folder for the store's data."""
    parameters = registry.get("vector_store", block.type).cls.Parameters
    found = {}
    for name in _LOCATION_FIELDS:
        if not is_path_field(parameters, name):
            continue
        value = block.parameters.get(name, parameters.model_fields[name].default)
        if isinstance(value, str) and value and not _is_address(value):
            found[name] = value
    return found


def _is_address(value: str) -> bool:
    return "://" in value or value.startswith("unix:") or value == ":memory:"


def _relocated(block: VectorStoreBlock, folder: Path, registry: Registry) -> VectorStoreBlock:
    locations = _locations(block, registry)
    if not locations:
        return block
    folder.mkdir(parents=True, exist_ok=True)
    # The last part of the name stays: a Milvus Lite file keeps its `.db` name.
    moved = {name: str(folder / Path(value).name) for name, value in locations.items()}
    return block.model_copy(update={"parameters": {**block.parameters, **moved}})


async def evaluate_against(
    file: str | Path,
    ref: str,
    only: list[str] | None = None,
    *,
    registry: Registry | None = None,
    workers: int | None = None,
    explain: int = 0,
) -> AgainstReport:
    """Index and measure ``file`` as it is at ``ref`` and in the working tree (module docstring).

    ``only`` narrows the knowledge bases (those of the working-tree file with
    an ``evaluation`` block). ``explain`` keeps each query's first hits with
    their explain (``evaluate``). Raises :class:`AgainstError` when the ref or the file
    at it cannot be found, ``ConfigError`` when either version is invalid.
    """
    registry = registry or default_registry()
    head = load_pipeline(file, registry)
    names = [
        kb.name
        for kb in head.spec.knowledge_bases
        if kb.evaluation is not None and (not only or kb.name in only)
    ]
    if not names:
        raise AgainstError(f"{file}: no knowledge base with an `evaluation` block")
    queries: dict[str, tuple[list[JudgedQuery], int]] = {}
    for kb in head.spec.knowledge_bases:
        if kb.name in names and kb.evaluation is not None:
            judged = kb.evaluation
            topics = head.folder / judged.topics if judged.topics else None
            queries[kb.name] = (load_queries(head.folder / judged.queries, topics), judged.k)
    version = locate(head.path, ref)
    cache = head.spec.embedding_cache
    if cache is not None:
        folder = (head.folder / Path(cache.path).expanduser()).resolve()
        cache = cache.model_copy(update={"path": str(folder)})
    run_tag = secrets.token_hex(3)
    head_digest = hashlib.sha256(head.path.read_bytes()).hexdigest()[:8]
    report = AgainstReport(version, {}, {}, queries={n: q for n, (q, _) in queries.items()})
    with tempfile.TemporaryDirectory(prefix="ragflow-eval-", ignore_cleanup_errors=True) as tmp:
        temporary = Path(tmp).resolve()
        base_file = materialise(version, temporary / "checkout")
        with _named_at(version):
            base = load_pipeline(base_file, registry)
        at_base = {kb.name for kb in base.spec.knowledge_bases}
        base_names = [name for name in names if name in at_base]
        sides = [
            ("base", base, base_names, f"{version.commit[:8]}{run_tag}"),
            ("head", head, names, f"{head_digest}{run_tag}"),
        ]
        for side, loaded, wanted, tag in sides:
            spec = evaluation_spec(
                loaded.spec,
                tag=tag,
                stores=temporary / "stores" / side,
                cache=cache,
                registry=registry,
            )
            outside = [
                place
                for place in embedded_locations(spec, loaded.folder, registry)
                if not place.is_relative_to(temporary)
            ]
            if outside:  # not reached: evaluation_spec moved them all; a guard for what it misses
                raise RagflowError(f"an evaluation would write into {outside[0]}")
            report.collections[side] = {
                kb.name: kb.collection for kb in spec.knowledge_bases if kb.name in wanted
            }
            if not wanted:
                continue
            label = f"{ref} ({version.commit[:12]})" if side == "base" else "the working tree"
            logger.info("indexing %s into %s", label, ", ".join(report.collections[side].values()))
            with _named_at(version) if side == "base" else contextlib.nullcontext():
                results = await _index_and_measure(
                    replace(loaded, spec=spec), registry, wanted, queries, workers, label, explain
                )
            (report.base if side == "base" else report.head).update(results)
    return report


@contextlib.contextmanager
def _named_at(version: GitVersion) -> Iterator[None]:
    """A base file's issues named as the user knows the file, not by its temporary path."""
    try:
        yield
    except ConfigError as exc:
        for issue in exc.issues:
            issue.file = f"{version.ref}:{version.path}"
        raise


async def _index_and_measure(
    loaded: LoadedPipeline,
    registry: Registry,
    names: list[str],
    queries: dict[str, tuple[list[JudgedQuery], int]],
    workers: int | None,
    label: str,
    explain: int,
) -> dict[str, EvaluationResult]:
    """Index ``names`` into their (new) collections, measure them, then drop the collections.

    One build for all three, so a store in memory holds what was indexed.
    """
    issues = source_issues(loaded, require_files=False, only=names)
    if issues:
        raise ConfigError(issues)
    async with Pipeline(loaded, registry).build(names) as built:
        try:
            indexed = await run(built, names, RunOptions(workers=workers))
            for kb_report in indexed.knowledge_bases:
                if kb_report.aborted:
                    raise RagflowError(
                        f"{label}: {kb_report.name}: indexing stopped at the first failure "
                        f"(on_error: fail): {kb_report.aborted}"
                    )
                if kb_report.no_files:  # an empty index would measure as zero, not fail
                    raise RagflowError(
                        f"{label}: {kb_report.name}: {'; '.join(kb_report.unmatched_sources)}"
                    )
            return {
                name: await evaluate(built.knowledge_base(name), *queries[name], explain=explain)
                for name in names
            }
        finally:
            for name in names:
                knowledge_base = built.knowledge_base(name)
                try:
                    await knowledge_base.clear()
                except Exception as exc:  # the result stands; say what was left behind
                    logger.warning(
                        "could not drop the evaluation collection %s: %s",
                        knowledge_base.collection,
                        exc,
                    )
