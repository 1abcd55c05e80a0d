"""The turns layer (seed 003): the recent turns of this conversation, as a transcript.

The plan says how many. Replies whose write is still queued are merged in,
so the next message sees the bot's last answer even before it is stored. The
message a person replied to (a Discord reply) is shown first when it is older
than the window, so "what do you mean?" under an old answer has that answer.
Only turns the audience may see are shown (a thread of a restricted channel
sees that channel's messages; nobody else's).
"""

from __future__ import annotations

from memory.conversation import ConversationStore, StoredMessage
from memory.layers.base import TRANSCRIPT, BaseLayer, MemoryItem, RecallQuery, Section, SourceRef


class TurnsLayer(BaseLayer):
    name = "turns"

    def __init__(self, conversations: ConversationStore) -> None:
        self._conversations = conversations

    async def recall(self, query: RecallQuery) -> Section | None:
        audience, plan = query.audience, query.plan
        if audience.channel_id is None or plan.turns <= 0:
            return None
        turns = await self._conversations.recent(
            audience.scope,
            audience.channel_id,
            plan.turns,
            before_id=query.before_message_id,
            visible_channel=audience.visible_channel,
        )
        stored = {m.external_id for m in turns}
        pending = [
            m
            for m in query.extra_turns
            if m.external_id not in stored and m.scope == audience.scope and m.channel_id == audience.channel_id
        ]
        if pending:
            turns = sorted(turns + pending, key=lambda m: m.created_at)[-plan.turns :]
        target = query.reply_to
        if (
            target is not None
            and target.scope == audience.scope
            and target.channel_id == audience.channel_id
            and target.id not in {m.id for m in turns}
        ):  # replied to: shown first, however old
            turns = [target, *turns]
        return Section(self.name, "Conversation", tuple(turn_item(m) for m in turns), placement=TRANSCRIPT, priority=0)


def turn_item(m: StoredMessage) -> MemoryItem:
    line = f"{m.author_name}: {m.content}"
    source = (SourceRef(m.id, m.external_id, m.channel_id, m.source, m.author_id, m.channel_name),) if m.id > 0 else ()
    return MemoryItem(
        "turn", None, line, line, (m.id,) if m.id > 0 else (), m.created_at, ref=m.id, sources=source, payload=m
    )
