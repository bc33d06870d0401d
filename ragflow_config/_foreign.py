"""AgentScope's objects meeting ours, and ours meeting AgentScope's code.

Both libraries define classes of the same names and fields (``TextBlock``,
``Chunk``, ``VectorRecord``...) that are not each other's: each library's
``isinstance`` checks and Pydantic fields refuse the other's, or drop it
silently. A plain data object of AgentScope's converts to ours without loss
(a Pydantic model of the same fields), so it is converted where it arrives.
An object that runs code (a model, a store, a knowledge base, a middleware)
cannot: there the error names both libraries and the way across, the bridge.
AgentScope is never imported here; its objects are known by their module.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from pydantic import BaseModel, ValidationError

from ._errors import MixedLibrariesError

P = ParamSpec("P")
R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)

BRIDGE = (
    "use BuiltPipeline.as_agentscope(), whose knowledge bases and middlewares are "
    "AgentScope's own running on ours (one knowledge base: "
    "ragflow_config.agentscope_bridge.knowledge_base(kb))"
)
# AgentScope's modules that call a knowledge base, model or store, by the class users know.
_AGENTSCOPE_CALLERS = {
    "agentscope.agent._agent": "Agent",
    "agentscope.middleware._rag": "RAGMiddleware",
    "agentscope.rag._knowledge": "KnowledgeBase",
}


def from_agentscope(value: Any) -> bool:
    """Whether ``value`` is an object of one of AgentScope's classes."""
    return type(value).__module__.partition(".")[0] == "agentscope"


def converted(value: Any, *kinds: type[BaseModel]) -> Any:
    """``value``, or, when it is AgentScope's object of one of ``kinds``' names, ours."""
    if isinstance(value, BaseModel) and from_agentscope(value):
        for kind in kinds:
            if type(value).__name__ == kind.__name__:
                return kind.model_validate(value.model_dump())
    return value


def converted_parameters(value: BaseModel, kind: type[M], owner: str) -> M:
    """AgentScope's ``Parameters`` of a component as ours (``kind``): the options it sets,
    which ours validates; :class:`MixedLibrariesError` naming both when they do not fit."""
    try:
        return kind.model_validate(value.model_dump(exclude_unset=True))
    except ValidationError as exc:
        raise MixedLibrariesError(
            f"agentscope's {type(value).__qualname__} was given to ragflow_config's {owner}, "
            f"whose parameters differ; give them as keywords ({owner}.Parameters lists them): "
            f"{exc}"
        ) from exc


def refuse_agentscope(value: Any, given_to: str, way_out: str) -> None:
    """Raise :class:`MixedLibrariesError` when ``value`` is AgentScope's: it was given to
    our ``given_to``, and ``way_out`` says what to use instead."""
    if from_agentscope(value):
        raise MixedLibrariesError(
            f"agentscope's {type(value).__name__} was given to ragflow_config's {given_to}: "
            f"{way_out}"
        )


def refuse_agentscope_callers(function: Callable[P, R]) -> Callable[P, R]:
    """Wrap a method that AgentScope's code calls on one of ours given to its objects (a
    knowledge base given to its ``RAGMiddleware``, a middleware to its ``Agent``): that call
    fails at once, naming both and the bridge, instead of AgentScope failing later on our
    results or running our hooks with its agent.

    The caller is known at call time only, before a coroutine runs, hence a plain function
    returning the coroutine.
    """

    @functools.wraps(function)
    def entry(*args: P.args, **kwargs: P.kwargs) -> R:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.partition(".")[0] == "agentscope":
            ours, user = type(args[0]).__name__, _AGENTSCOPE_CALLERS.get(caller, caller)
            raise MixedLibrariesError(
                f"a ragflow_config {ours} was given to agentscope's {user}: {BRIDGE}"
            )
        return function(*args, **kwargs)

    return entry
