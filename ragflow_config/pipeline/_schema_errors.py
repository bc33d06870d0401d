"""A pipeline file's JSON Schema errors, with jsonschema imported only for a file that has some.

`validate` runs in pre-commit hooks, on every commit, on files that are almost
always valid. Importing jsonschema costs about 50 ms of CPU, a sixth of the
whole command; jsonschema_rs, a compiled validator of the same drafts, tells a
valid file so after an import of about 10 ms. Only a file it does not call
valid goes to jsonschema, whose errors the messages are worded from: one it
finds invalid, and one holding a value it cannot take (a YAML date, an
anchored or octal scalar), which jsonschema judges as before. Neither asserts
``format``, as jsonschema does not by default.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import jsonschema_rs

if TYPE_CHECKING:
    from jsonschema import ValidationError


def schema_errors(schema: dict[str, Any], data: Any) -> Iterator[ValidationError]:
    """jsonschema's errors of ``data`` against ``schema`` (Draft 2020-12); none when valid."""
    try:
        valid = jsonschema_rs.validator_for(schema, validate_formats=False).is_valid(data)
    except Exception:  # a value or pattern it cannot take: jsonschema judges, as before
        valid = False
    if valid:
        return iter(())
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema).iter_errors(data)
