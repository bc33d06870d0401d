"""What an agent knows about the reply in progress."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..message import Msg


@dataclass
class ReplyState:
    """One reply's state, with AgentScope 2.x's names.

    ``context`` is the agent's conversation (the same list as
    ``agent.context``); ``cur_iter`` is 0 during the reply's first reasoning
    step and grows by one per reasoning-acting round.
    """

    reply_id: str
    context: list[Msg]
    cur_iter: int = 0

    def append_context(self, name: str, blocks: list[Any]) -> None:
        """Add ``blocks`` to this reply's own message (``id == reply_id``), creating it if the
        conversation does not end with it, as AgentScope's ``AgentState.append_context``."""
        last = self.context[-1] if self.context else None
        if (
            last is not None
            and last.role == "assistant"
            and last.name == name
            and last.id == self.reply_id
        ):
            last.content.extend(blocks)
        else:
            self.context.append(Msg(name, blocks, "assistant", id=self.reply_id))
