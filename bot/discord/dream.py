"""The dream channel: proposals posted from the outbox with reactions and persistent buttons; votes go to Governance.

Proposals are stored first and posted from the outbox (dream/outbox.py): on
ready, every minute, and right after `/dream run`, so one made while the
channel was unreachable, or by `hippobot dream` with the bot off, is posted
when it can be. Raw reaction events are used, so votes on messages posted
before a restart count; the buttons are dynamic items whose custom ids carry
the proposal id, so they keep working after a restart too. Buttons defer
before the vote, so a slow vote never shows "interaction failed". Only
approvers count (Governance checks); the bot's own reactions and other bots
are ignored.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import discord
from discord.ext import commands, tasks

from dream.governance import PENDING, GovernanceError, NotAnApprover, Proposal, VoteOutcome, Voter
from dream.outbox import Outbox

if TYPE_CHECKING:
    from bot.discord.client import HippoBotBase

log = logging.getLogger(__name__)

APPROVE, REJECT, DISCUSS = "✅", "❌", "💬"
OUTBOX_INTERVAL_MINUTES = 1.0


def voter_from(member: discord.Member | discord.User) -> Voter:
    """What Governance's ApproverPolicy decides on: the member's roles (names and ids) and Manage Server."""
    roles = frozenset()
    manage = False
    if isinstance(member, discord.Member):
        roles = frozenset(r.name for r in member.roles) | frozenset(str(r.id) for r in member.roles)
        manage = member.guild_permissions.manage_guild
    return Voter(str(member.id), member.display_name, roles, manage)


def proposal_content(proposal: Proposal, guild_id: int | None) -> str:
    """The post; example messages only when they come from the dream channel's own server."""
    text = proposal.render(show_examples=proposal.scope in (None, str(guild_id)))
    if proposal.status == "pending":
        text += f"\nReact {APPROVE} to approve, {REJECT} to reject, {DISCUSS} to discuss."
    return text[:1990] + ("…" if len(text) > 1990 else "")


class ProposalButton(discord.ui.DynamicItem[discord.ui.Button], template=r"hippobot:proposal:(?P<action>approve|reject|discuss):(?P<pid>\d+)"):  # type: ignore[call-arg]
    def __init__(self, action: str, proposal_id: int) -> None:
        labels = {"approve": ("Approve", discord.ButtonStyle.success),
                  "reject": ("Reject", discord.ButtonStyle.danger),
                  "discuss": ("Discuss", discord.ButtonStyle.secondary)}
        label, style = labels[action]
        super().__init__(discord.ui.Button(label=label, style=style,
                                           custom_id=f"hippobot:proposal:{action}:{proposal_id}"))
        self.action = action
        self.proposal_id = proposal_id

    @classmethod
    async def from_custom_id(cls, interaction: discord.Interaction, item: discord.ui.Button, match: re.Match[str]) -> ProposalButton:  # type: ignore[override]
        return cls(match["action"], int(match["pid"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        cog: DreamCog | None = interaction.client.get_cog("DreamCog")  # type: ignore[union-attr]
        if cog is None:
            await interaction.response.send_message("The dream channel is not running.", ephemeral=True)
            return
        if self.action == "discuss":
            await interaction.response.send_message("Opening a thread for discussion.", ephemeral=True)
            if interaction.message is not None:
                await cog.open_thread(interaction.message, self.proposal_id)
            return
        # acknowledge within Discord's 3 seconds first: applying a proposal may take longer
        await interaction.response.defer(ephemeral=True, thinking=True)
        message = await cog.vote(self.proposal_id, interaction.user, self.action == "approve", interaction.message)
        await interaction.followup.send(message, ephemeral=True)


def proposal_view(proposal_id: int) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    for action in ("approve", "reject", "discuss"):
        view.add_item(ProposalButton(action, proposal_id))
    return view


class DiscordDreamChannel:
    """Dream-channel posts for the dream cycle (implements dream.cycle.DreamChannel)."""

    def __init__(self, bot: HippoBotBase, channel_id: int) -> None:
        self._bot = bot
        self._channel_id = channel_id

    def _channel(self) -> Any:
        channel = self._bot.get_channel(self._channel_id)
        if channel is None:
            raise GovernanceError(f"dream channel {self._channel_id} is not visible to the bot")
        return channel

    async def post_proposal(self, proposal: Proposal) -> str | None:
        """Post a proposal; a pending one gets the vote buttons and reactions. Returns the message id."""
        channel = self._channel()
        guild_id = channel.guild.id if getattr(channel, "guild", None) else None
        pending = proposal.status == PENDING
        message = await channel.send(proposal_content(proposal, guild_id),
                                     view=proposal_view(proposal.id) if pending else discord.utils.MISSING)
        if pending:
            for emoji in (APPROVE, REJECT, DISCUSS):
                await message.add_reaction(emoji)
        return str(message.id)

    async def edit_proposal(self, proposal: Proposal, ref: str) -> str | None:
        """Update a posted proposal in place (posted anew if its message is gone). Returns the message id."""
        channel = self._channel()
        try:
            message = await channel.fetch_message(int(ref))
        except discord.NotFound:
            return await self.post_proposal(proposal)
        guild_id = channel.guild.id if getattr(channel, "guild", None) else None
        await message.edit(content=proposal_content(proposal, guild_id),
                           view=proposal_view(proposal.id) if proposal.status == PENDING else None)
        return ref

    async def post_digest(self, text: str, chart: Path | None) -> None:
        file = discord.File(chart, filename=chart.name) if chart else discord.utils.MISSING
        await self._channel().send(text[:2000], file=file)


class DreamCog(commands.Cog):
    def __init__(self, bot: HippoBotBase) -> None:
        self.bot = bot
        self.outbox = Outbox(bot.app.db.pool)

    def dream_channel(self) -> DiscordDreamChannel | None:
        channel_id = self.bot.settings.dream_channel_id
        return DiscordDreamChannel(self.bot, channel_id) if channel_id else None

    async def flush_outbox(self) -> int:
        """Post what the outbox holds to the dream channel (none configured: they wait). Returns how many."""
        channel = self.dream_channel()
        if channel is None:
            return 0
        return await self.outbox.flush(self.bot.app.governance, channel)

    @tasks.loop(minutes=OUTBOX_INTERVAL_MINUTES)
    async def outbox_loop(self) -> None:
        try:
            await self.flush_outbox()
        except Exception:  # a database hiccup must not stop the loop for good
            log.exception("outbox flush failed")

    @commands.Cog.listener()
    async def on_ready(self) -> None:
        if not self.outbox_loop.is_running():
            self.outbox_loop.start()  # its first run is now: what waited while the bot was off goes out

    async def cog_unload(self) -> None:
        self.outbox_loop.cancel()

    @commands.Cog.listener()
    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        dream_channel = self.bot.settings.dream_channel_id
        if dream_channel is None or payload.channel_id != dream_channel:
            return
        if self.bot.user is not None and payload.user_id == self.bot.user.id:
            return  # the bot's own reactions
        member = payload.member
        if member is None or member.bot:
            return
        emoji = str(payload.emoji)
        if emoji not in (APPROVE, REJECT, DISCUSS):
            return
        proposal = await self.bot.app.governance.find_by_ref(str(payload.message_id))
        if proposal is None:
            return
        channel = self.bot.get_channel(payload.channel_id)
        message = None
        if channel is not None:
            try:
                message = await channel.fetch_message(payload.message_id)  # type: ignore[union-attr]
            except discord.HTTPException:
                message = None
        if emoji == DISCUSS:
            if message is not None:
                await self.open_thread(message, proposal.id)
            return
        await self.vote(proposal.id, member, emoji == APPROVE, message)

    async def vote(self, proposal_id: int, user: discord.Member | discord.User, approve: bool,
                   message: discord.Message | None) -> str:
        """Cast a vote through Governance; edit the outcome into the proposal message. Returns a reply line.

        A member votes for their own server: Governance refuses another
        server's proposal, or a global one, unless the voter is the bot's owner.
        """
        where: dict[str, Any] = {}
        if not await self._is_owner(user):
            guild = getattr(user, "guild", None)
            where["scope"] = str(guild.id) if guild is not None else None
        try:
            outcome: VoteOutcome = await self.bot.app.governance.vote(
                proposal_id, voter_from(user), approve, now=datetime.now(UTC), **where
            )
        except NotAnApprover:
            log.info("vote by non-approver %s on proposal %s ignored", user.id, proposal_id)
            return "Only members with the approver role (or Manage Server) can vote on proposals."
        except GovernanceError as exc:
            return str(exc)
        if not outcome.counted:
            return f"Proposal #{proposal_id} is already {outcome.proposal.status}; nothing changed."
        if outcome.decided:
            if outcome.proposal.status == "applied":
                await self.bot.app.router.refresh()
            if message is not None:
                try:
                    guild_id = message.guild.id if message.guild else None
                    await message.edit(content=proposal_content(outcome.proposal, guild_id), view=None)
                except discord.HTTPException:
                    log.warning("could not edit proposal message %s", message.id)
            return f"Proposal #{proposal_id} {outcome.proposal.status}."
        return f"Vote recorded on proposal #{proposal_id}."

    async def _is_owner(self, user: discord.abc.User) -> bool:
        is_owner = getattr(self.bot, "is_owner", None)  # commands.Bot's; absent on test doubles
        return bool(is_owner is not None and await is_owner(user))

    async def open_thread(self, message: discord.Message, proposal_id: int) -> None:
        if message.thread is not None:
            return
        try:
            await message.create_thread(name=f"Proposal #{proposal_id}")
        except discord.HTTPException:
            log.warning("could not open a thread for proposal %s", proposal_id)
