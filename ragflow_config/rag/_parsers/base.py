"""The parser interface: a file in, a list of ``Section``s out."""

from __future__ import annotations

import mimetypes
import os
from abc import abstractmethod
from typing import ClassVar

from ..._component import Component, ComponentParameters
from ..._document import Section
from ..._errors import ParserFileNotFoundError


class ParserBase(Component):
    """Splits a raw file into ``Section``s along its natural boundaries.

    ``file`` is the raw content as ``bytes``, or a filesystem path as ``str``
    (``TextParser`` also accepts already-decoded text, see its docs).
    Parsers are stateless and reusable across calls and tasks.
    """

    supported_media_types: ClassVar[list[str]] = []

    @classmethod
    def supported_extensions(cls) -> list[str]:
        """File-picker hints; routing always uses ``supported_media_types``."""
        extensions = {
            ext for mt in cls.supported_media_types for ext in mimetypes.guess_all_extensions(mt)
        }
        return sorted(extensions)

    @classmethod
    def only_data_for(cls, parameters: ComponentParameters) -> bool:
        """Whether, with ``parameters``, every section made of a file is data (an image),
        never text: a text-only embedding model then has nothing of its files to embed."""
        return False

    @abstractmethod
    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        """Parse ``file`` into sections, in document order, each with ``source=filename``."""

    @staticmethod
    def read_bytes(file: bytes | str, filename: str) -> bytes:
        """The content of ``file``: itself if bytes, else the file it names."""
        if isinstance(file, bytes):
            return file
        if not os.path.isfile(file):
            raise ParserFileNotFoundError(filename, file)
        with open(file, "rb") as handle:
            return handle.read()
