"""Secrets, read from the environment with pydantic-settings and never printed.

A pipeline file never holds a secret's value: it may name the environment
variable to read (``api_key_env: MY_KEY``); the default names are documented
on each credential class.
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from .._errors import RagflowError

C = TypeVar("C", bound="CredentialBase")


class MissingSecretError(RagflowError):
    """A secret a component needs is not set in the environment."""


class CredentialBase(BaseSettings):
    """Base of every credential. Fields are ``SecretStr``: ``repr`` and logs show ``**********``."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    @classmethod
    def from_environment(cls: type[C], variables: dict[str, str] | None = None) -> C:
        """Read the credential; ``variables`` maps a field to the variable that holds it.

        Fields not in ``variables`` come from the class's default variables. A field
        in it comes from its variable alone: were the named variable unset, falling
        back to the default one would send, say, ``OPENAI_API_KEY`` to the server the
        other variable was meant for.
        """
        values: dict[str, Any] = {}
        for field, variable in (variables or {}).items():
            value = os.environ.get(variable)
            if value:
                values[field] = value
            elif not cls.model_fields[field].is_required():
                values[field] = cls.model_fields[field].get_default(call_default_factory=True)
        try:
            return cls(**values)
        except ValidationError as exc:
            missing = [
                (variables or {}).get(str(err["loc"][0]), cls.default_variable(str(err["loc"][0])))
                for err in exc.errors()
                if err["type"] == "missing"
            ]
            if missing:
                raise MissingSecretError(
                    f"{cls.__name__}: set the environment variable {', '.join(missing)}"
                ) from None
            raise

    @classmethod
    def default_variable(cls, field: str) -> str:
        prefix = cls.model_config.get("env_prefix") or ""
        return f"{prefix}{field}".upper()
