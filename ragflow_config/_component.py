"""What every pluggable part shares: a validated ``Parameters`` model.

One declaration drives the constructor, the generated JSON Schema and the
pipeline file's validation, so they can never disagree.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class ComponentParameters(BaseModel):
    """Base of every component's parameters: unknown keys are an error, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Component:
    """A part the pipeline file can name by ``type``.

    Subclasses declare a nested ``Parameters`` model. Keyword arguments given to
    the constructor are validated by it, so ``PPTParser(table_format="csv")``
    fails the same way a pipeline file does.
    """

    Parameters: ClassVar[type[ComponentParameters]] = ComponentParameters
    parameters: ComponentParameters

    def __init__(self, parameters: ComponentParameters | None = None, **options: Any) -> None:
        if parameters is not None and options:
            raise TypeError("pass either `parameters` or keyword options, not both")
        if parameters is None:
            parameters = self.Parameters(**options)
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
RELATIVE_PATH = {"x-ragflow-path": True}


def is_path_field(model: type[BaseModel], name: str) -> bool:
    field = model.model_fields.get(name)
    extra = field.json_schema_extra if field else None
    return isinstance(extra, dict) and bool(extra.get("x-ragflow-path"))
