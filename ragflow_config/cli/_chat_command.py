"""`chat`: an agent that answers from the pipeline's knowledge bases and cites its sources."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import defined
from ._arguments import text_not_blank
from ._output import EXIT_OK, UsageError, print_json
from ._parser import Commands

if TYPE_CHECKING:  # the handler imports the pipeline and the agent: the CLI starts without
    from ..pipeline import Pipeline

SYSTEM_PROMPT = (
    "You answer questions from the knowledge bases you are given: retrieved passages are "
    "numbered, each with its source, like `[1] (source: install.md)`. Answer from them only, "
    "and cite the source of every fact in brackets, like [install.md]. If they do not hold "
    "the answer, say so instead of guessing."
)


def register(commands: Commands) -> None:
    chat = commands.add(
        "chat",
        _chat,
        "ask an agent that answers from the file's knowledge bases (through its `middlewares`) "
        "with a chat model of its `chat_models`, citing its sources",
    )
    chat.add_argument("file", type=Path, metavar="FILE", help="the pipeline file")
    chat.add_argument(
        "-q",
        "--question",
        type=text_not_blank("question"),
        help="ask one question and exit (default: read questions from stdin)",
    )
    chat.add_argument(
        "--model", metavar="NAME", help="an entry of `chat_models` (default: the only one)"
    )
    chat.add_argument("--system-prompt", default=SYSTEM_PROMPT, help="replace the default prompt")
    chat.add_argument(
        "--json",
        action="store_true",
        help='print each answer as {"question": ..., "answer": ...}: one JSON document per '
        "question, so --question gives one",
    )


def _model_name(pipeline: Pipeline, wanted: str | None) -> str:
    names = list(pipeline.spec.chat_models)
    if wanted is not None:
        if wanted not in names:
            raise UsageError(
                f"{pipeline.path}: no chat model named {wanted!r} (defined: {defined(names)})"
            )
        return wanted
    if len(names) != 1:
        raise UsageError(
            f"{pipeline.path}: chat needs a model: "
            + (
                "add one to `chat_models`"
                if not names
                else f"pick one with --model ({', '.join(names)})"
            )
        )
    return names[0]


def _questions(one: str | None) -> Iterator[str]:
    if one is not None:
        yield one
        return
    interactive = sys.stdin.isatty()
    while True:
        try:
            line = input("you> ") if interactive else sys.stdin.readline()
        except EOFError:
            return
        if not interactive and not line:
            return
        if line.strip():
            yield line.strip()


def _chat(args: argparse.Namespace) -> int:
    from ..agent import Agent
    from ..message import Msg
    from ..pipeline import Pipeline
    from ..pipeline._build import build_component
    from ..tool import Toolkit

    pipeline = Pipeline.load(args.file)
    name = _model_name(pipeline, args.model)
    if not pipeline.spec.middlewares:
        raise UsageError(
            f"{pipeline.path}: chat answers through the file's `middlewares`; add one, "
            "e.g. {type: rag, knowledge_bases: [...], parameters: {mode: agentic}}"
        )

    async def session() -> int:
        async with pipeline.build() as built, contextlib.AsyncExitStack() as stack:
            model: Any = build_component(
                pipeline.registry,
                "chat_model",
                pipeline.spec.chat_models[name],
                pipeline.path.parent,
            )
            if hasattr(model, "__aenter__"):
                model = await stack.enter_async_context(model)
            toolkit = Toolkit(
                [tool for middleware in built.middlewares for tool in await middleware.list_tools()]
            )
            agent = Agent("assistant", args.system_prompt, model, toolkit, built.middlewares)
            for question in _questions(args.question):
                answer = await agent.reply(Msg("user", question, "user"))
                if args.json:
                    print_json({"question": question, "answer": answer.text})
                    sys.stdout.flush()
                else:
                    print(answer.text, flush=True)
        return EXIT_OK

    return asyncio.run(session())
