"""What every pluggable part shares: a validated ``Parameters`` model.

One declaration drives the constructor, the generated JSON Schema and the
pipeline file's validation, so they can never disagree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.config import JsonDict

from ._foreign import converted_parameters, from_agentscope
from ._redact import redact_urls

_ENV_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ComponentParameters(BaseModel):
    """Base of every component's parameters: unknown keys are an error, values are frozen.

    A parameter named ``*_env`` holds the *name* of an environment variable
    that holds a secret, never the secret itself.
    """

    # Inputs may hold secrets pasted in the wrong place: errors never repeat them.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    @model_validator(mode="before")
    @classmethod
    def _env_names_are_names(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if (
                    key.endswith("_env")
                    and isinstance(value, str)
                    and not _ENV_VAR_NAME.fullmatch(value)
                ):
                    # The value is not repeated: it may be a secret pasted in the wrong place.
                    raise ValueError(
                        f"{key} must be the name of an environment variable (letters, digits "
                        "and _), not its value"
                    )
        return data

    # Parameters added to the component after collections were built with it,
    # whose default keeps its old output. At that default they are left out of a
    # run's fingerprint, so upgrading re-indexes nothing that would come out the same.
    added_later: ClassVar[frozenset[str]] = frozenset()

    def fingerprint_settings(self) -> dict[str, Any]:
        """The settings a run's fingerprint digests: all but an added-later one at its default."""
        settings = self.model_dump(mode="json")
        for name in self.added_later:
            field = type(self).model_fields[name]
            if getattr(self, name) == field.get_default(call_default_factory=True):
                del settings[name]
        return settings

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # A URL parameter (base_url, url, hosts) may hold a password or a key.
        for name, value in super().__repr_args__():
            if isinstance(value, str):
                value = redact_urls(value)
            elif isinstance(value, list):
                value = [redact_urls(v) if isinstance(v, str) else v for v in value]
            yield name, value


class Component:
    """A part the pipeline file can name by ``type``.

    Subclasses declare a nested ``Parameters`` model. Keyword arguments given to
    the constructor are validated by it, so ``PPTParser(table_format="csv")``
    fails the same way a pipeline file does.
    """

    Parameters: ClassVar[type[ComponentParameters]] = ComponentParameters
    parameters: ComponentParameters
    #: Modules the component imports on first use, each with the extra that
    #: installs it. Validation reports every one that is missing before a run
    #: writes anything; a runner's parser processes import a parser's once,
    #: up front, in the server they are forked from.
    requires: ClassVar[dict[str, str]] = {}

    @classmethod
    def requires_for(cls, parameters: ComponentParameters) -> dict[str, str]:
        """``requires``, and the modules that these parameters add (an option's engine)."""
        return dict(cls.requires)

    def __init__(self, parameters: ComponentParameters | None = None, **options: Any) -> None:
        if parameters is not None and options:
            raise TypeError("pass either `parameters` or keyword options, not both")
        if parameters is None:
            parameters = self.Parameters(**options)
        elif from_agentscope(parameters):  # the same component's, AgentScope's spelling
            parameters = converted_parameters(parameters, self.Parameters, type(self).__name__)
        elif not isinstance(parameters, self.Parameters):
            raise TypeError(
                f"parameters must be {type(self).__name__}.Parameters, "
                f"not {type(parameters).__name__}"
            )
        self.parameters = parameters

    def describe(self) -> dict[str, Any]:
        """The component's type and parameters, as recorded in a collection's fingerprint."""
        return {
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "parameters": self.parameters.model_dump(mode="json"),
        }


# Marks a parameter that holds a filesystem path: a pipeline file's relative
# paths are resolved against the file's own folder, not the working directory.
RELATIVE_PATH: JsonDict = {"x-ragflow-path": True}


def is_path_field(model: type[BaseModel], name: str) -> bool:
    field = model.model_fields.get(name)
    extra = field.json_schema_extra if field else None
    return isinstance(extra, dict) and bool(extra.get("x-ragflow-path"))
