"""The episodes layer (seed 001 HEI-NW): past moments, written through the gate, recalled by similarity.

Recall: the plan's k nearest episodes the audience may see, above the plan's
threshold, skipping those already in the recent-turns window. Absorb: the
person's message with the bot's reply becomes one episode keyed by the
message's vector, with the write gate's salience from the reply's surprise
and the message's novelty; the episodes that reached the prompt are marked
recalled (which reinforces them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import asyncpg

from memory.episodic import EpisodeHit, EpisodicStore, NewEpisode, WriteGate, novelty
from memory.conversation import StoredMessage
from memory.embed import Embedder
from memory.layers.base import MEMORY, AbsorbedTurn, BaseLayer, MemoryItem, RecallQuery, Section


class EpisodesLayer(BaseLayer):
    name = "episodes"

    def __init__(self, store: EpisodicStore, gate: WriteGate, embedder: Embedder) -> None:
        self.store = store
        self._gate = gate
        self._embedder = embedder

    async def recall(self, query: RecallQuery) -> Section | None:
        plan = query.plan
        if plan.vectors <= 0:
            return None
        # Recall drops items that repeat the recent turns (the turns layer runs alongside), so ask
        # for as many more as the window may hold; the section's limit is the plan's k.
        extra = plan.turns if query.audience.channel_id is not None else 0
        candidates = await self.store.search(query.scope, query.vector, plan.vectors + extra + 1,
                                             visible_channel=query.audience.visible_channel)
        candidates = [h for h in candidates if h.episode.message_id != query.before_message_id]
        nearest = candidates[0].similarity if candidates else None
        hits = [h for h in candidates if h.similarity >= plan.similarity_threshold]
        return Section(self.name, "What {bot} remembers from earlier conversations",
                       tuple(episode_item(h) for h in hits), placement=MEMORY, priority=20,
                       meta={"nearest_similarity": nearest, "limit": plan.vectors})

    async def absorb(self, turn: AbsorbedTurn) -> None:
        message, reply = turn.message, turn.reply
        async with self.store.pool.acquire() as conn, conn.transaction():
            nearest = await self.store.nearest_other(message.scope, turn.vector, message.id, conn)
            salience = self._gate.score(turn.surprise, novelty(nearest))
            content = f"{message.author_name}: {message.content}"
            if reply is not None:
                content += f"\n{reply.author_name}: {reply.content}"
            await self.store.add_many([NewEpisode(
                scope=message.scope, channel_id=message.channel_id, author_id=message.author_id,
                message_id=message.id, content=content, embedding=turn.vector, created_at=message.created_at,
                reply_message_id=reply.id if reply else None, surprise=turn.surprise, novelty=novelty(nearest),
                salience=salience, visible_in=message.visible_in,
            )], conn)
            used = turn.used.get(self.name, ())
            if used:
                await self.store.mark_recalled(message.scope, used, turn.now, conn)

    async def edited(self, message: StoredMessage, conn: asyncpg.Connection) -> None:
        """New text: the episode's first line and its key follow (the reply line stays)."""
        episode = await conn.fetchval("SELECT content FROM episodes WHERE message_id = $1", message.id)
        if episode is None:
            return
        _, _, rest = episode.partition("\n")
        updated = f"{message.author_name}: {message.content}" + (f"\n{rest}" if rest else "")
        vector = await self._embedder.embed(message.content)
        await self.store.update_source(message.scope, message.id, updated, vector, conn)

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> Mapping[str, int]:
        n = await conn.fetchval(
            """SELECT count(*) FROM episodes
               WHERE message_id = ANY($1::bigint[]) OR reply_message_id = ANY($1::bigint[])""", list(message_ids))
        return {"episodes": n}


def episode_item(h: EpisodeHit) -> MemoryItem:
    e = h.episode
    flat = " / ".join(line.strip() for line in e.content.splitlines() if line.strip())
    return MemoryItem("episode", h.similarity, e.content, f"[{e.created_at:%Y-%m-%d}] {flat}", e.message_ids,
                      e.created_at, ref=e.id, sources=h.sources, payload=h)
