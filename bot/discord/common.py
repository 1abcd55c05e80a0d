"""What several cogs share: who counts as an admin or a voter, the audience of an interaction or a channel,
replies that fit Discord, the scope of the dream run in progress, and posting the proposal outbox.

Cogs import these from here and never from one another, so no cog depends on another cog's module (the
client module alone imports every cog, to add them).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import discord
from discord import app_commands

from bot.discord.rules import Visibility, visibility_for
from dream.governance import ApproverPolicy, Proposal, Voter
from memory.fields import display_text

if TYPE_CHECKING:
    from dream.outbox import Outbox
    from memory.clock import Clock

INLINE_LIMIT = 1900
# The scope of the dream run in progress in this task, for its digest (DreamChannel.post_digest names none):
# `/dream run` sets it; the nightly run over every scope leaves it None, and its digest goes to the owner.
_DIGEST_SCOPE: ContextVar[str | None] = ContextVar("hippobot_digest_scope", default=None)


class ProposalRouter(Protocol):
    """Where each scope's proposals go (bot.discord.dream.DreamRouter)."""

    async def routable(self, scopes: list[str | None]) -> list[str | None]: ...

    async def post_proposal(self, proposal: Proposal) -> str | None: ...


@dataclass(frozen=True)
class DreamPosting:
    """Posting what the outbox holds, each proposal to its scope's dream channel (or the owner). Built once by the
    client around its router and handed to the cogs in ``Services.posting``: the DreamCog posts on its timer,
    AdminCog right after `/dream run` and `/dream channel`, and neither reaches the other."""

    outbox: Outbox
    router: ProposalRouter
    clock: Clock

    async def flush(self) -> int:
        """Post what waits; a scope with nowhere to post keeps its proposals waiting. Returns how many went out."""
        routable = await self.router.routable(await self.outbox.waiting_scopes())
        if not routable:
            return 0
        return await self.outbox.flush(self.router, now=self.clock.now(), scopes=routable)


@contextlib.contextmanager
def digest_for(scope: str | None) -> Iterator[None]:
    """Within it, a dream run's digest is ``scope``'s (posted where its proposals go)."""
    token = _DIGEST_SCOPE.set(scope)
    try:
        yield
    finally:
        _DIGEST_SCOPE.reset(token)


def digest_scope() -> str | None:
    """The scope ``digest_for`` set in this task (None: no one server's)."""
    return _DIGEST_SCOPE.get()


def voter_from(member: discord.Member | discord.User, *, owner: bool = False) -> Voter:
    """What Governance's ApproverPolicy decides on: the member's roles (names and ids) in the server the vote
    is cast in, and Manage Server there. The bot's ``owner`` counts as an approver everywhere (DMs included)."""
    roles: frozenset[str] = frozenset()
    manage = owner
    if isinstance(member, discord.Member):
        roles = frozenset(r.name for r in member.roles) | frozenset(str(r.id) for r in member.roles)
        manage = manage or member.guild_permissions.manage_guild
    return Voter(str(member.id), member.display_name, roles, manage)


def is_admin(interaction: discord.Interaction, policy: ApproverPolicy) -> bool:
    """A guild member whom the approver policy allows (the same rule as votes); never in DMs."""
    member = interaction.user
    return isinstance(member, discord.Member) and policy.allows(voter_from(member))


def dm_or_guild() -> app_commands.AppCommandContext:
    return app_commands.AppCommandContext(guild=True, dm_channel=True, private_channel=False)


async def reply(interaction: discord.Interaction, text: str, *, ephemeral: bool = True) -> None:
    """Answer inline, or as a file when too long for one message; names and quotes in it are made safe to show
    (``display_text``)."""
    send = interaction.followup.send if interaction.response.is_done() else interaction.response.send_message
    text = display_text(text)
    if len(text) <= INLINE_LIMIT:
        await send(text, ephemeral=ephemeral)
    else:
        await send(
            "The answer is long; it is attached.",
            ephemeral=ephemeral,
            file=discord.File(io.BytesIO(text.encode()), filename="hippobot.txt"),
        )


def visible_channel(interaction: discord.Interaction) -> str | None:
    """The audience's channel: a thread's parent, since threads follow their parent."""
    channel = interaction.channel
    if isinstance(channel, discord.Thread):
        return str(channel.parent_id)
    return None if interaction.channel_id is None else str(interaction.channel_id)


def visibility_of(channel: Any) -> Visibility:
    """Who may see what is said in ``channel``: from @everyone's view permission, threads following their parent."""
    guild = getattr(channel, "guild", None)
    if guild is None:
        return visibility_for(is_dm=True, channel_id=channel.id, parent_channel_id=None, everyone_can_view=True)
    thread = isinstance(channel, discord.Thread)
    target = channel.parent if thread else channel
    # a private thread is narrower than its parent: never public, at most the parent's audience
    private_thread = thread and channel.type == discord.ChannelType.private_thread
    everyone = target is not None and not private_thread and target.permissions_for(guild.default_role).view_channel
    return visibility_for(
        is_dm=False,
        channel_id=channel.id,
        parent_channel_id=channel.parent_id if thread else None,
        everyone_can_view=everyone,
    )
