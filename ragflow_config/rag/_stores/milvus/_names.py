"""Collection names as Milvus spells them, and the digests that key documents and pointers."""

from __future__ import annotations

import hashlib
import re

_COLLECTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
_ENCODED_PREFIX = "_m_"  # only names this module encodes start with it


def milvus_name(name: str) -> str:
    """The Milvus collection that holds the collection the caller calls ``name``.

    A name Milvus accepts is used as it is. Any other (``kb-1``, ``2024``,
    ``Ärzte``) is spelled reversibly with what Milvus allows: behind the
    prefix ``_m_``, ``_`` becomes ``__`` and any other character ``_<hex code>_``
    (``kb-1`` is ``_m_kb_2d_1``). A valid name that starts with the prefix is
    spelled that way too, so two names never meet in one collection. A
    spelling past Milvus's 255 characters is cut and ends in the name's
    SHA-256. Errors and listings keep the caller's name.
    """
    if _COLLECTION_NAME.match(name) and not name.startswith(_ENCODED_PREFIX):
        return name
    spelled = _ENCODED_PREFIX + "".join(
        char if char.isascii() and char.isalnum() else "__" if char == "_" else f"_{ord(char):x}_"
        for char in name
    )
    if len(spelled) <= 255:
        return spelled
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{spelled[: 255 - 1 - len(digest)]}_{digest}"


def document_key(document_id: str) -> str:
    return hashlib.sha256(document_id.encode()).hexdigest()


def pointer_key(name: str) -> str:
    return hashlib.sha256(f"ragflow-pointer:{name}".encode()).hexdigest()
