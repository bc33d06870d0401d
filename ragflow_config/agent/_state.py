"""What an agent knows about the reply in progress, and the events a reply emits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..event import AgentEvent
from ..message import Msg

EventHandler = Callable[[AgentEvent], None]


@dataclass
class ReplyState:
    """One reply's state.

    ``inputs`` are the messages the reply answers (set when the reply's core
    starts, inside every ``on_reply``); ``cur_iter`` is 0 during the reply's
    first reasoning step and grows by one per reasoning-acting round.
    """

    reply_id: str
    on_event: EventHandler | None = None
    inputs: list[Msg] = field(default_factory=list)
    cur_iter: int = 0

    def emit(self, event: AgentEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)
