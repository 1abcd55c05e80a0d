"""What the Discord cogs use of the app, built once by the bot and handed to each cog's constructor.

Cogs never reach into the App (``self.bot.app``): they get this frozen
object, so a cog's needs are listed in one place and a test can build a cog
from an App without a client; no cog reaches another (no ``get_cog``):
what two cogs share is in here (``posting``). The bot itself is still passed
where discord.py needs it (sending, fetching channels), and for the
bot's settings (``bot.settings``: the transport's configuration, which a
test may change on a running bot).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from dream.channels import DreamChannelStore
from dream.guild_view import GuildView
from dream.outbox import Outbox
from memory.mine import MemoryOfPerson
from memory.participation import ParticipationStore
from memory.persona.store import PersonaStore

if TYPE_CHECKING:
    from bot.app import App
    from bot.discord.common import DreamPosting
    from bot.brain import Brain
    from dream.cycle import DreamCycle
    from dream.governance import Governance
    from memory.archetypes import ArchetypeRouter, ArchetypeStore
    from memory.clock import Clock
    from memory.conversation import ConversationStore
    from memory.episodic import EpisodicStore
    from memory.provenance import Provenance


@dataclass(frozen=True)
class Services:
    brain: Brain
    governance: Governance
    provenance: Provenance
    conversations: ConversationStore
    episodes: EpisodicStore
    archetype_store: ArchetypeStore
    router: ArchetypeRouter
    dream: DreamCycle
    # pool-backed stores, one each, shared by the cogs
    participation: ParticipationStore
    dream_channels: DreamChannelStore
    guild_view: GuildView
    mine: MemoryOfPerson
    outbox: Outbox
    persona: PersonaStore
    next_dream_run: Callable[[], datetime | None]  # the scheduler starts after the cogs are added
    clock: Clock  # every "now" of the cogs (the app's: memory and the transport agree on the time)
    # posting the outbox to the dream channels: the client's (it needs the bot); None without a client
    posting: DreamPosting | None = None

    @classmethod
    def of(cls, app: App) -> Services:
        pool = app.db.pool

        def next_dream_run() -> datetime | None:
            return app.scheduler.next_run if app.scheduler is not None else None

        return cls(
            brain=app.brain,
            governance=app.governance,
            provenance=app.provenance,
            conversations=app.conversations,
            episodes=app.episodes,
            archetype_store=app.archetype_store,
            router=app.router,
            dream=app.dream,
            participation=ParticipationStore(pool),
            dream_channels=DreamChannelStore(pool),
            guild_view=GuildView(pool, app.governance),
            mine=MemoryOfPerson(pool),
            outbox=Outbox(app.governance, app.clock),
            persona=PersonaStore(pool),
            next_dream_run=next_dream_run,
            clock=app.clock,
        )
