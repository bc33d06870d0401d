"""Build the judged test collections of bench/collections/ from fetched git copies.

    python bench/fetch_collections.py [NAME ...] [--git-dir NAME=PATH ...] [--out DIR]

Each collection is converted into MED's layout (``../shared/data/ir/med``):
``docs/<id>.txt`` (one file a document), ``topics`` (``<qid>\\t<query>``, the
judged queries only) and ``qrels`` (``<qid> 0 <id>.txt 1``), which is what
``ragflow-config eval`` reads. The sources are read with ``git show
COMMIT:PATH`` from a clone of the repository named in each collection's
README (``git clone https://github.com/OWNER/NAME``); by default from the
snapshots under /work/.mirror. Every source file is checked against the
sha256 the README gives before it is read, so a different copy fails loudly
instead of measuring something else.

Only ``docs/`` is left out of git (about 9,700 files); ``topics``,
``qrels``, ``pipeline.yaml`` and ``README.md`` are committed.
Cranfield and CISI are held out and never read.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import re
import subprocess
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent / "collections"
MIRROR = Path("/work/.mirror")

Docs = dict[str, str]
Topics = dict[str, str]
Qrels = list[tuple[str, str]]


@dataclass(frozen=True)
class Source:
    repo: str
    commit: str
    files: dict[str, str]  # path in the repository -> sha256


def _git_show(git_dir: Path, commit: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
    ).stdout


def _read(source: Source, git_dir: Path) -> dict[str, bytes]:
    data = {}
    for path, sha in source.files.items():
        blob = _git_show(git_dir, source.commit, path)
        got = hashlib.sha256(blob).hexdigest()
        if got != sha:
            raise SystemExit(f"{source.repo}@{source.commit}:{path}: sha256 {got}, expected {sha}")
        data[path] = blob
    return data


def _squash(text: str) -> str:
    return " ".join(text.split())


def _lines(text: str) -> str:
    """Non-blank lines, each stripped of trailing padding (as MED's docs)."""
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def _smart_records(text: str) -> list[tuple[str, dict[str, str]]]:
    """SMART's ``.I id`` records with their ``.X`` fields (``.T``, ``.W``, ...)."""
    records: list[tuple[str, dict[str, str]]] = []
    field = None
    for line in text.splitlines():
        if line.startswith(".I"):
            records.append((line[2:].strip(), {}))
            field = None
        elif re.fullmatch(r"\.[A-Z]", line.strip()):
            field = line.strip()[1]
            records[-1][1][field] = ""
        elif field is not None:
            records[-1][1][field] += line + "\n"
    return records


def _smart_doc(fields: dict[str, str]) -> str:
    """Title, a blank line, then the abstract (no authors, dates or citations)."""
    parts = [_lines(fields.get(key, "")) for key in ("T", "W")]
    return "\n\n".join(part for part in parts if part) + "\n"


def cacm(files: dict[str, bytes]) -> tuple[Docs, Topics, Qrels]:
    docs = {
        doc_id: _smart_doc(fields)
        for doc_id, fields in _smart_records(files["cacm.all"].decode("ascii"))
    }
    qrels = []
    for line in files["qrels.text"].decode("ascii").splitlines():
        qid, doc_id, *_ = line.split()
        qrels.append((str(int(qid)), str(int(doc_id))))
    # The file's last record, `.I 0`, is empty: no query.
    topics = {
        str(int(qid)): _squash(fields["W"])
        for qid, fields in _smart_records(files["query.text"].decode("ascii"))
        if "W" in fields
    }
    return docs, topics, qrels


def adi(files: dict[str, bytes]) -> tuple[Docs, Topics, Qrels]:
    with tarfile.open(fileobj=io.BytesIO(files["adi/adi.tar.gz"]), mode="r:gz") as tar:

        def member(name: str) -> str:
            handle = tar.extractfile(name)
            assert handle is not None
            return handle.read().decode("ascii")

        docs = {doc_id: _smart_doc(fields) for doc_id, fields in _smart_records(member("ADI.ALL"))}
        topics = {
            str(int(qid)): _squash(fields["W"]) for qid, fields in _smart_records(member("ADI.QRY"))
        }
        qrels = [
            (str(int(line.split()[0])), str(int(line.split()[1])))
            for line in member("ADI.REL").splitlines()
            if line.strip()
        ]
    return docs, topics, qrels


LISA_PARTS = [
    f"data/lisa/LISA{part}"
    for part in [
        "0.001",
        "0.501",
        "1.001",
        "1.501",
        "2.001",
        "2.501",
        "3.001",
        "3.501",
        "4.001",
        "4.501",
        "5.001",
        "5.501",
        "5.627",
        "5.850",
    ]
]

LISA_SHA256 = {
    "data/lisa/LISA0.001": "626b5bfe8bbcda4e90f06f9ef16cfce6377437bca17568731b486e491c37b77b",
    "data/lisa/LISA0.501": "4347e9c38aaecbe3efe2f18141e388372f87433f1914cbd682368e2be817145d",
    "data/lisa/LISA1.001": "ada3469598e1f0239ad0ffb933567d4276d6a991715165a6d977213a54edddac",
    "data/lisa/LISA1.501": "ecaaeb7d4126f820d5b31e1e0565be949a4bc1ffc27f0ef196104663bbe79813",
    "data/lisa/LISA2.001": "046a8fc320194add03372fe824cf3a049159ed1bb5412592ad4da4783ff6a149",
    "data/lisa/LISA2.501": "ffa062d08af2c7b41f8e1755cf7bd91dd0af4bf3b140b5bd2580ae230de2106d",
    "data/lisa/LISA3.001": "2271dd0f42ae994c39d5e12dca0565005a3710abe1c088f4d40b41c052de5849",
    "data/lisa/LISA3.501": "daefea09ad10f383b3d0377bfef678af7c0112673ed4b1d47d7d311c26c7ecda",
    "data/lisa/LISA4.001": "99678da43421ff5acf53b3f2e93f454913d85932443b685c6aec355ac0192cbc",
    "data/lisa/LISA4.501": "a559152ba8e78003f0a589f3d4fedebc3a2489cb2fe916ed106bae3f5dddcaaf",
    "data/lisa/LISA5.001": "f24c63e7924b478f0cb75437d783cd087e00b92c6f5ee2b4d42fe2033291f7e5",
    "data/lisa/LISA5.501": "cfff39ddddcc9a6da9ebee06d397508305d5e54135f5aa65a487af99a7a37fb1",
    "data/lisa/LISA5.627": "87db8d725d60606f566470d351306038626b4887223647cf8f7f3baebfd82354",
    "data/lisa/LISA5.850": "fac9d15c6f41f7ccc1142c9fe6524ebbf5d656f8ef7bae0804ec5f20e51d21c3",
}


def lisa(files: dict[str, bytes]) -> tuple[Docs, Topics, Qrels]:
    text = "".join(files[path].decode("ascii") for path in LISA_PARTS)
    docs = {}
    for record in text.split("*" * 44):
        match = re.match(r"\s*Document\s+(\d+)\n(.*)", record, re.S)
        if match:
            # The blank line after the title holds spaces in some records.
            title, *abstract = re.split(r"\n[ \t]*\n", match.group(2), maxsplit=1)
            docs[match.group(1)] = "\n\n".join([_squash(title), *map(_lines, abstract)]) + "\n"
    topics = {}
    for match in re.finditer(
        r"^(\d+)\n(.*?)#", files["data/lisa/LISA.QUE"].decode("ascii"), re.S | re.M
    ):
        topics[match.group(1)] = _squash(match.group(2))
    qrels = []
    rel = files["data/lisa/LISA.REL"].decode("ascii")
    for match in re.finditer(r"Query (\d+)\n\d+ Relevant Refs:\n([\d\s]+?)-1", rel):
        qrels += [(match.group(1), doc_id) for doc_id in match.group(2).split()]
    return docs, topics, qrels


def _slashed(text: str) -> dict[str, str]:
    """NPL's records: an id line, text lines, then a line holding only ``/``."""
    records = {}
    for record in re.split(r"^\s*/\s*$", text, flags=re.M):
        head, _, body = record.strip().partition("\n")
        if head:
            records[head.strip()] = body
    return records


def npl(files: dict[str, bytes]) -> tuple[Docs, Topics, Qrels]:
    docs = {
        doc_id: _lines(body) + "\n"
        for doc_id, body in _slashed(files["data/npl/doc-text"].decode("ascii")).items()
    }
    topics = {
        qid: _squash(body).lower()
        for qid, body in _slashed(files["data/npl/query-text"].decode("ascii")).items()
    }
    qrels = [
        (qid, doc_id)
        for qid, body in _slashed(files["data/npl/rlv-ass"].decode("ascii")).items()
        for doc_id in body.split()
    ]
    return docs, topics, qrels


LUPPAR = "fabianobie/luppar", "9abddd4af4e3720b8efc7716c8d1f22c6e76354e"

COLLECTIONS: dict[str, tuple[Source, Callable[[dict[str, bytes]], tuple[Docs, Topics, Qrels]]]] = {
    "cacm": (
        Source(
            "atcherepanov/Stemming-Algorithm",
            "a92ce141e3cba95b0213569a42cb1668201963f7",
            {
                "cacm.all": "10b28e355d4bd65916698da9bbc91e78f116de204b9b42bce0ce4e8b39babe42",
                "query.text": "07332cfcadad2570ce65146a701b4d93a91583c6f945fb32fad1a141b62dc0e4",
                "qrels.text": "a027893039f4faf40b90a64a27322e85e1b0cc66f9634bb754a93ac4f81a75ca",
            },
        ),
        cacm,
    ),
    "adi": (
        Source(
            "lailaglez/belief-network-irs",
            "9094e4cde738bd93ed1747dc958b5acb0e0fa684",
            {"adi/adi.tar.gz": "68c1867824cbad9e28ce498fafa644d5ac1a7a8a41cde0bffaf402095bbc7aa6"},
        ),
        adi,
    ),
    "lisa": (
        Source(
            *LUPPAR,
            {
                **{path: LISA_SHA256[path] for path in LISA_PARTS},
                "data/lisa/LISA.QUE": "d2f042f4f68f8c67546dc44aba073e6acd3582be6e88c7f41a948b760eaea935",
                "data/lisa/LISA.REL": "3df07a974316be1136fd4dba7b7701396752f1f26c8e6c4eb39c91ec24ea6ff6",
            },
        ),
        lisa,
    ),
    "npl": (
        Source(
            *LUPPAR,
            {
                "data/npl/doc-text": "9a9a396da453eb0a6c659b1399ae6c551d11d04a68b6f0a4e21fc757e77c398f",
                "data/npl/query-text": "e7af19694ca1c8f8d1ad14e1d0afac59c9ca4379004789150623e568f1e21b70",
                "data/npl/rlv-ass": "0f65985363fabd2c001d6ec5baba94d818a63787cf00b6cc49d0c6591ff96bcd",
            },
        ),
        npl,
    ),
}


def build(name: str, git_dir: Path, out: Path) -> None:
    source, convert = COLLECTIONS[name]
    docs, topics, qrels = convert(_read(source, git_dir))
    missing = sorted({doc_id for _, doc_id in qrels} - docs.keys(), key=int)
    untold = sorted({qid for qid, _ in qrels} - topics.keys(), key=int)
    if missing or untold:
        raise SystemExit(f"{name}: judged documents {missing} or queries {untold} not found")
    # A query without judgements scores 0 whatever is retrieved: left out, as MED has none.
    unjudged = sorted(topics.keys() - {qid for qid, _ in qrels}, key=int)
    topics = {qid: text for qid, text in topics.items() if qid not in unjudged}
    target = out / name
    (target / "docs").mkdir(parents=True, exist_ok=True)
    for old in (target / "docs").glob("*.txt"):
        old.unlink()
    for doc_id, text in docs.items():
        (target / "docs" / f"{doc_id}.txt").write_text(text, encoding="utf-8")
    (target / "topics").write_text(
        "".join(
            f"{qid}\t{text}\n" for qid, text in sorted(topics.items(), key=lambda t: int(t[0]))
        ),
        encoding="utf-8",
    )
    (target / "qrels").write_text(
        "".join(f"{qid} 0 {doc_id}.txt 1\n" for qid, doc_id in sorted(set(qrels), key=_order)),
        encoding="utf-8",
    )
    digest = hashlib.sha256()
    for doc_id in sorted(docs, key=int):
        digest.update(f"{doc_id}\0{docs[doc_id]}\0".encode())
    print(
        f"{name}: {len(docs)} documents, {len(topics)} judged queries (left out, unjudged: "
        f"{' '.join(unjudged) or 'none'}), {len(set(qrels))} judged pairs; docs digest {digest.hexdigest()}"
    )


def _order(pair: tuple[str, str]) -> tuple[int, int]:
    return int(pair[0]), int(pair[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(COLLECTIONS))
    parser.add_argument("--git-dir", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    git_dirs = dict(item.split("=", 1) for item in args.git_dir)
    for name in args.names or COLLECTIONS:
        if name not in COLLECTIONS:
            parser.error(f"unknown collection {name!r}: one of {', '.join(COLLECTIONS)}")
        repo = COLLECTIONS[name][0].repo
        default = MIRROR / repo.replace("/", "+") / "repo"
        build(name, Path(git_dirs.get(name, default)), args.out)


if __name__ == "__main__":
    main()
