"""The dream channels: proposals posted from the outbox with reactions and persistent buttons; votes go to Governance.

Each server's proposals and digests go to its own dream channel only, and those about no one server to the
bot's owner (``dream.channels`` says where, ``DreamRouter`` posts there). Proposals are stored
first and posted from the outbox (dream/outbox.py): on ready, every minute, and right after `/dream run` or
`/dream channel set`, so one made while the channel was unreachable, or by `hippobot dream` with the bot
off, is posted when it can be; a server with no dream channel keeps its proposals waiting. Raw reaction
events are used, so votes on messages posted before a restart count; the buttons are dynamic items whose
custom ids carry the proposal id, so they keep working after a restart too. Buttons defer before the vote,
so a slow vote never shows "interaction failed". A vote counts for the server it is cast in: only that
server's approvers (Governance checks), only on that server's proposals (Governance refuses others with
OtherScope); the bot's owner may vote anywhere, DMs included. The bot's own reactions and other bots are
ignored.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import discord
from discord.ext import commands, tasks

from bot.discord.common import DreamPosting, digest_scope, voter_from
from dream.channels import Destination, DreamChannelStore, destination, is_server_scope
from dream.governance import PENDING, GovernanceError, NotAnApprover, Proposal, VoteOutcome

if TYPE_CHECKING:
    from bot.discord.client import HippoBotBase
    from bot.discord.services import Services

log = logging.getLogger(__name__)

APPROVE, REJECT, DISCUSS = "✅", "❌", "💬"
OUTBOX_INTERVAL_MINUTES = 1.0


def proposal_content(proposal: Proposal, guild_id: int | None) -> str:
    """The post; example messages only when they come from the dream channel's own server."""
    body, _, last = proposal.render(show_examples=proposal.scope in (None, str(guild_id))).rpartition("\n")
    tail = last  # when it expires, or who decided it: kept whole when the body is cut to Discord's limit
    if proposal.status == "pending":
        tail += f"\nReact {APPROVE} to approve, {REJECT} to reject, {DISCUSS} to discuss."
    room = 1990 - len(tail) - 2
    return (body if len(body) <= room else body[:room] + "…") + "\n" + tail


class ProposalButton(
    discord.ui.DynamicItem[discord.ui.Button],
    template=r"hippobot:proposal:(?P<action>approve|reject|discuss):(?P<pid>\d+)",
):
    def __init__(self, action: str, proposal_id: int) -> None:
        labels = {
            "approve": ("Approve", discord.ButtonStyle.success),
            "reject": ("Reject", discord.ButtonStyle.danger),
            "discuss": ("Discuss", discord.ButtonStyle.secondary),
        }
        label, style = labels[action]
        super().__init__(
            discord.ui.Button(label=label, style=style, custom_id=f"hippobot:proposal:{action}:{proposal_id}")
        )
        self.action = action
        self.proposal_id = proposal_id

    @classmethod
    async def from_custom_id(  # type: ignore[override]
        cls, interaction: discord.Interaction, item: discord.ui.Button, match: re.Match[str]
    ) -> ProposalButton:
        return cls(match["action"], int(match["pid"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        # The client that dispatches a DynamicItem is the bot (HippoBotBase, typed by discord.py as a plain Client);
        # its DreamCog, while loaded, is its ``dream_cog`` (no cog is looked up by name). Any other client, or a bot
        # whose DreamCog is not loaded, has none.
        cog = getattr(interaction.client, "dream_cog", None)
        if not isinstance(cog, DreamCog):
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
    """Posts to one channel (a server's dream channel, or the owner's): the proposal half of the outbox and the
    digest. ``channel_id`` None: the bot owner's DMs."""

    def __init__(self, bot: HippoBotBase, channel_id: int | None) -> None:
        self._bot = bot
        self._channel_id = channel_id

    async def _channel(self) -> Any:
        if self._channel_id is None:
            owner = await owner_of(self._bot)
            if owner is None:
                raise GovernanceError("the bot's owner is unknown: nowhere to post global proposals")
            return owner.dm_channel or await owner.create_dm()
        channel = self._bot.get_channel(self._channel_id)
        if channel is None:
            # Not in this process's cache: gone, hidden from the bot, or in a server of another shard (a process
            # caches only its own shards' servers). Posting goes through the REST API, which any shard may use:
            # the nightly digest is posted by whichever process dreamed.
            try:
                channel = await self._bot.fetch_channel(self._channel_id)
            except (discord.NotFound, discord.Forbidden):
                raise GovernanceError(f"dream channel {self._channel_id} is not visible to the bot") from None
        return channel

    async def post_proposal(self, proposal: Proposal) -> str | None:
        """Post a proposal; a pending one gets the vote buttons and reactions. Returns the message id."""
        channel = await self._channel()
        guild_id = channel.guild.id if getattr(channel, "guild", None) else None
        pending = proposal.status == PENDING
        message = await channel.send(
            proposal_content(proposal, guild_id), view=proposal_view(proposal.id) if pending else discord.utils.MISSING
        )
        if pending:
            try:
                for emoji in (APPROVE, REJECT, DISCUSS):
                    await message.add_reaction(emoji)
            except discord.HTTPException as exc:  # no Add Reactions there: the post stands, its buttons vote
                log.warning("could not add the vote reactions to proposal %s (HTTP %s)", proposal.id, exc.status)
        return str(message.id)

    async def edit_proposal(self, proposal: Proposal, ref: str) -> str | None:
        """Update a posted proposal in place (posted anew if its message is gone, or is in another channel:
        the scope's dream channel changed). Returns the message id."""
        channel = await self._channel()
        try:
            message = await channel.fetch_message(int(ref))
        except discord.NotFound:
            return await self.post_proposal(proposal)
        guild_id = channel.guild.id if getattr(channel, "guild", None) else None
        await message.edit(
            content=proposal_content(proposal, guild_id),
            view=proposal_view(proposal.id) if proposal.status == PENDING else None,
        )
        return ref

    async def post_digest(self, text: str, chart: Path | None) -> None:
        file = discord.File(chart, filename=chart.name) if chart else discord.utils.MISSING
        await (await self._channel()).send(text[:2000], file=file)


class DreamRouter:
    """The dream cycle's and the outbox's channel: each proposal and digest goes where its scope's go
    (``dream_channels.destination``); implements dream.cycle.DreamChannel."""

    def __init__(self, bot: HippoBotBase, store: DreamChannelStore) -> None:
        self._bot = bot
        self.store = store

    async def destination(self, scope: str | None) -> Destination | None:
        own = await self.store.channel_id(scope) if is_server_scope(scope) else None
        owner_channel = self._bot.settings.dream_channel_id
        holder = self._bot.get_channel(owner_channel) if owner_channel is not None else None
        guild = getattr(holder, "guild", None)
        return destination(
            scope, own=own, owner_channel=owner_channel, owner_channel_guild=guild.id if guild is not None else None
        )

    async def _poster(self, scope: str | None) -> DiscordDreamChannel:
        where = await self.destination(scope)
        if where is None:
            raise GovernanceError(f"{scope} has no dream channel")
        return DiscordDreamChannel(self._bot, where.channel_id)

    async def post_proposal(self, proposal: Proposal) -> str | None:
        return await (await self._poster(proposal.target_scope)).post_proposal(proposal)

    async def edit_proposal(self, proposal: Proposal, ref: str) -> str | None:
        return await (await self._poster(proposal.target_scope)).edit_proposal(proposal, ref)

    async def post_digest(self, text: str, chart: Path | None) -> None:
        scope = digest_scope()
        where = await self.destination(scope)
        if where is None:
            log.info("no dream channel for %s: its digest is not posted", scope)
            return
        try:
            await DiscordDreamChannel(self._bot, where.channel_id).post_digest(text, chart)
        except (discord.HTTPException, GovernanceError) as exc:
            if not where.to_owner_dm:
                raise  # a configured channel that fails is the run's error, as before
            # no owner's channel was configured: an owner who cannot be DMed must not fail every night's run
            log.warning("could not DM the digest to the bot's owner (%s)", type(exc).__name__)

    async def routable(self, scopes: list[str | None]) -> list[str | None]:
        """The scopes among ``scopes`` whose posts have somewhere to go now."""
        return [s for s in scopes if await self.destination(s) is not None]


class DreamCog(commands.Cog):
    def __init__(self, bot: HippoBotBase, services: Services) -> None:
        self.bot = bot
        self.services = services
        self.outbox = services.outbox
        self.channels = services.dream_channels
        # the client's posting (shared with AdminCog); a cog built without a client posts through its own
        self.posting = services.posting or DreamPosting(
            services.outbox, DreamRouter(bot, self.channels), services.clock
        )
        self.router = self.posting.router

    async def flush_outbox(self) -> int:
        """Post what the outbox holds, each proposal to its scope's dream channel (or the owner); a scope with
        nowhere to post keeps its proposals waiting. Returns how many went out."""
        return await self.posting.flush()

    async def dream_channel_ids(self, guild_id: int) -> set[int]:
        """The channels of a server where the bot never chats and votes count: its own dream channel and the
        owner's channel (if it is there)."""
        own = await self.channels.channel_id(str(guild_id))
        return {c for c in (own, self.bot.settings.dream_channel_id) if c is not None}

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

    async def cog_load(self) -> None:
        self.bot.dream_cog = self  # what the proposal buttons vote through (ProposalButton.callback)

    async def cog_unload(self) -> None:
        self.outbox_loop.cancel()
        if self.bot.dream_cog is self:
            self.bot.dream_cog = None

    @commands.Cog.listener()
    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        if await self.channels.drop_channel(str(channel.guild.id), channel.id):
            log.info("dream channel %s of %s deleted: the server has none now", channel.id, channel.guild.id)

    @commands.Cog.listener()
    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        if self.bot.user is not None and payload.user_id == self.bot.user.id:
            return  # the bot's own reactions
        emoji = str(payload.emoji)
        if emoji not in (APPROVE, REJECT, DISCUSS):
            return
        voter: discord.Member | discord.User | None
        if payload.guild_id is not None:
            if payload.channel_id not in await self.dream_channel_ids(payload.guild_id):
                return
            voter = payload.member
        else:  # the owner's DMs, where global proposals are posted
            owner = await owner_of(self.bot)
            voter = owner if owner is not None and owner.id == payload.user_id else None
        if voter is None or voter.bot:
            return
        proposal = await self.services.governance.find_by_ref(str(payload.message_id))
        if proposal is None:
            return
        channel = self.bot.get_channel(payload.channel_id)
        if channel is None and payload.guild_id is None and isinstance(voter, discord.User):
            channel = voter.dm_channel or await voter.create_dm()
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
        outcome = await self.vote(proposal.id, voter, emoji == APPROVE, message)
        log.info("reaction vote on proposal %s by %s: %s", proposal.id, voter.id, outcome)

    async def vote(
        self, proposal_id: int, user: discord.Member | discord.User, approve: bool, message: discord.Message | None
    ) -> str:
        """Cast a vote through Governance; edit the outcome into the proposal message. Returns a reply line.

        A member votes for the server it is in: Governance refuses another
        server's proposal, or a global one, unless the voter is the bot's owner.
        """
        where: dict[str, Any] = {}
        owner = await self._is_owner(user)
        if not owner:
            guild = getattr(user, "guild", None)
            where["scope"] = str(guild.id) if guild is not None else None
        try:
            outcome: VoteOutcome = await self.services.governance.vote(
                proposal_id, voter_from(user, owner=owner), approve, now=self.services.clock.now(), **where
            )
        except NotAnApprover:
            log.info("vote by non-approver %s on proposal %s ignored", user.id, proposal_id)
            return "Only members with the approver role (or Manage Server) can vote on proposals."
        except GovernanceError as exc:
            log.info("vote by %s on proposal %s refused: %s", user.id, proposal_id, type(exc).__name__)
            return str(exc)
        if not outcome.counted:
            return f"Proposal #{proposal_id} is already {outcome.proposal.status}; nothing changed."
        if outcome.decided:
            if outcome.proposal.status == "applied":
                await self.services.router.refresh()
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
        if message.thread is not None or message.guild is None:
            return  # a DM has no threads
        try:
            await message.create_thread(name=f"Proposal #{proposal_id}")
        except discord.HTTPException:
            log.warning("could not open a thread for proposal %s", proposal_id)


async def owner_of(bot: Any) -> discord.User | None:
    """The bot's owner: ``owner_id`` (or the first of ``owner_ids``) when set, else the application's owner (a
    team's owner for a team application)."""
    owner_id = getattr(bot, "owner_id", None) or next(iter(getattr(bot, "owner_ids", None) or ()), None)
    if owner_id is None:
        try:
            info = await bot.application_info()
        except (discord.HTTPException, AttributeError):
            return None
        owner = info.team.owner if info.team is not None and info.team.owner is not None else info.owner
        owner_id = owner.id
    user = bot.get_user(owner_id)
    if user is None:
        try:
            user = await bot.fetch_user(owner_id)
        except discord.HTTPException:
            return None
    return user
