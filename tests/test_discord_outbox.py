"""The proposal outbox (dream/outbox.py) with plain channel doubles and the real database."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.app import App
from dream.governance import Proposal
from dream.outbox import Outbox
from memory.clock import SimulatedClock


async def new_proposal(app: App, name: str = "tea_talk") -> int:
    p = await app.governance.propose(
        "new_archetype",
        name,
        {
            "name": name,
            "description": "Tea",
            "examples": ["tea?", "green or black?"],
            "context_turns": 5,
            "context_vectors": 5,
            "similarity_threshold": 0.7,
            "triple_depth": 1,
        },
        "r",
        {"messages": []},
        centroid=None,
        now=datetime.now(UTC),
        scope="555",
    )
    return p.id


class PrintingChannel:
    """Like the console: posts, returns no reference, cannot edit."""

    def __init__(self) -> None:
        self.posts: list[Proposal] = []

    async def post_proposal(self, proposal: Proposal) -> str | None:
        self.posts.append(proposal)
        return None


class DownChannel:
    async def post_proposal(self, proposal: Proposal) -> str | None:
        raise ConnectionError("the channel is away")


async def test_a_failed_post_stays_in_the_outbox(app: App) -> None:
    pid = await new_proposal(app)
    outbox = Outbox(app.governance)
    assert await outbox.pending() == [pid]
    assert await outbox.flush(DownChannel()) == 0
    assert await outbox.pending() == [pid]
    printing = PrintingChannel()
    assert await outbox.flush(printing) == 1
    assert [p.id for p in printing.posts] == [pid] and await outbox.pending() == []
    row = await app.db.pool.fetchrow("SELECT posted_ref, posted_at FROM proposals WHERE id = $1", pid)
    assert row["posted_ref"] is None and row["posted_at"] is not None


async def test_a_redaction_during_the_post_is_posted_at_the_next_flush(app: App) -> None:
    pid = await new_proposal(app)
    pool = app.db.pool

    class RacingChannel(PrintingChannel):
        async def post_proposal(self, proposal: Proposal) -> str | None:
            if not self.posts:  # a forgetting lands while the first post is on its way
                await pool.execute(
                    """UPDATE proposals SET payload = jsonb_set(payload, '{examples}', '["tea?"]'),
                                      post_pending = true WHERE id = $1""",
                    pid,
                )
            return await super().post_proposal(proposal)

    channel = RacingChannel()
    outbox = Outbox(app.governance)
    assert await outbox.flush(channel) == 1
    assert await outbox.pending() == [pid], "the post showed the old examples"
    assert await outbox.flush(channel) == 1
    assert channel.posts[-1].payload["examples"] == ["tea?"] and await outbox.pending() == []


async def test_an_updated_post_is_edited_where_the_channel_can(app: App) -> None:
    pid = await new_proposal(app)
    edits: list[tuple[int, str]] = []

    class EditingChannel(PrintingChannel):
        async def post_proposal(self, proposal: Proposal) -> str | None:
            await super().post_proposal(proposal)
            return "msg-1"

        async def edit_proposal(self, proposal: Proposal, ref: str) -> str | None:
            edits.append((proposal.id, ref))
            return ref

    channel = EditingChannel()
    outbox = Outbox(app.governance)
    await outbox.flush(channel)
    await app.db.pool.execute("UPDATE proposals SET post_pending = true WHERE id = $1", pid)
    await outbox.flush(channel)
    assert len(channel.posts) == 1 and edits == [(pid, "msg-1")]


async def test_a_flush_for_one_scope_leaves_the_others(app: App) -> None:
    ours = await new_proposal(app, "tea_talk")
    theirs = await app.governance.propose(
        "new_archetype",
        "x",
        {
            "name": "coffee_talk",
            "description": "d",
            "examples": ["coffee?"],
            "context_turns": 5,
            "context_vectors": 5,
            "similarity_threshold": 0.7,
            "triple_depth": 1,
        },
        "r",
        {"messages": []},
        centroid=None,
        now=datetime.now(UTC),
        scope="local",
    )
    outbox = Outbox(app.governance)
    printing = PrintingChannel()
    assert await outbox.flush(printing, scope="local") == 1
    assert [p.id for p in printing.posts] == [theirs.id] and await outbox.pending() == [ours]


async def test_a_post_is_recorded_at_the_outboxs_clock(app: App) -> None:
    """A flush told no "now" (the console's) records the post at the clock the outbox was given."""
    pid = await new_proposal(app)
    clock = SimulatedClock(datetime(2027, 3, 2, 12, 0, tzinfo=UTC))
    assert await Outbox(app.governance, clock).flush(PrintingChannel()) == 1
    assert await app.db.pool.fetchval("SELECT posted_at FROM proposals WHERE id = $1", pid) == clock.now()
