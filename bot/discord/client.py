"""The Discord bot: AutoShardedBot in production, the same bot unsharded for tests and small setups."""

from __future__ import annotations

import io
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

import discord
from discord.ext import commands

from bot.app import App
from bot.config import Settings
from bot.discord.admin import AdminCog
from bot.discord.channels import ChannelCog
from bot.discord.chat import ChatCog
from bot.discord.common import DreamPosting
from bot.discord.dream import DreamCog, DreamRouter, ProposalButton
from bot.discord.persona import PersonaCog
from bot.discord.places import PlacesCog
from bot.discord.reactions import ReactionsCog
from bot.discord.services import Services
from bot.discord.sources import ForgetSourceButton
from memory.db import session_locks

log = logging.getLogger(__name__)

PREFIX = "!hippobot "
BOT_LOCK_KEY = (
    0x686970706F626F74  # "hippobot": held by each `hippobot run` (shard_lock_keys), its shards' keys after it
)
COGS = (ChatCog, DreamCog, AdminCog, ChannelCog, PersonaCog, ReactionsCog, PlacesCog)


def allowed_mentions() -> discord.AllowedMentions:
    """Nothing the bot writes pings anyone: not @everyone or @here, not a role, not a person (generated text can
    hold any of them), and a reply does not ping its author. Every send and edit uses this unless it says
    otherwise."""
    return discord.AllowedMentions.none()


class ShardOptions(TypedDict, total=False):
    shard_count: int
    shard_ids: list[int]


def shard_options(settings: Settings) -> ShardOptions:
    """discord.py's ``shard_count`` and ``shard_ids`` from the settings, only those that are set (discord.py asks
    Discord for the count when none is given, and wants a count with any ids)."""
    options: ShardOptions = {}
    if settings.shard_count is not None:
        options["shard_count"] = settings.shard_count
        if settings.shard_ids is not None:
            options["shard_ids"] = list(settings.shard_ids)
    return options


def intents() -> discord.Intents:
    i = discord.Intents.default()
    i.message_content = True  # privileged: enable it in the developer portal
    i.members = False
    return i


if TYPE_CHECKING:
    # Every HippoBotBase is also a discord.Client (the two bots below mix one in): checked as a Bot, so that
    # the client's own attributes (user, get_channel, add_dynamic_items) are known.
    _BotBase = commands.Bot
else:
    _BotBase = commands.bot.BotBase


class HippoBotBase(_BotBase):
    """Shared by the sharded and unsharded bots: cogs, scheduler, and an orderly close."""

    app: App
    settings: Settings
    services: Services  # what the cogs (and the buttons that outlive them) use of the app
    dream_router: DreamRouter  # where each scope's proposals and digests are posted
    dream_cog: DreamCog | None = None  # set by the DreamCog while it is loaded: the proposal buttons vote through it
    command_prefix_text = PREFIX

    def _init_hippo(self, app: App, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        services = Services.of(app)
        # where each scope's proposals and digests go: the outbox's posting (shared by the cogs) and the
        # nightly dream's channel
        self.dream_router = DreamRouter(self, services.dream_channels)
        self.services = replace(services, posting=DreamPosting(services.outbox, self.dream_router, services.clock))

    async def setup_hook(self) -> None:
        for cog in COGS:
            await self.add_cog(cog(self, self.services))
        self.add_dynamic_items(ProposalButton)  # dream-channel buttons keep working after a restart
        self.add_dynamic_items(ForgetSourceButton)  # so do the forget buttons under replies
        self.add_command(sync)
        self.add_command(owner_stats)
        self.app.start_scheduler(self.dream_router)  # each digest goes where its scope's proposals go

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            await self.app.close()


class HippoBot(HippoBotBase, commands.AutoShardedBot):
    """``hippobot run``'s bot. With ``HIPPOBOT_SHARD_COUNT`` (and ``HIPPOBOT_SHARD_IDS``) set it runs those shards
    of a bot whose other shards run in other processes on the same database (docs/discord.md, *Running more than
    one process*); unset, one process runs as many shards as Discord recommends."""

    def __init__(self, app: App, settings: Settings) -> None:
        commands.AutoShardedBot.__init__(
            self,
            command_prefix=PREFIX,
            intents=intents(),
            help_command=None,
            allowed_mentions=allowed_mentions(),
            **shard_options(settings),
        )
        self._init_hippo(app, settings)


class SingleShardHippoBot(HippoBotBase, commands.Bot):
    def __init__(self, app: App, settings: Settings, *, intents_: discord.Intents | None = None) -> None:
        commands.Bot.__init__(
            self,
            command_prefix=PREFIX,
            intents=intents_ or intents(),
            help_command=None,
            allowed_mentions=allowed_mentions(),
        )
        self._init_hippo(app, settings)


@commands.command(name="sync")
@commands.is_owner()
async def sync(ctx: commands.Context) -> None:
    """Owner only: publish the slash commands (never done on start)."""
    synced = await ctx.bot.tree.sync()
    await ctx.reply(f"Synced {len(synced)} slash command(s).")


@commands.command(name="stats")
@commands.is_owner()
async def owner_stats(ctx: commands.Context) -> None:
    """Owner only: every scope's counts, sent by DM (a server's channel must not see other servers')."""
    rows = await ctx.bot.services.guild_view.all_scopes()
    lines = [
        f"{r.scope}: {r.messages} message(s), {r.people} people, {r.episodes} episode(s), "
        f"{r.pending_proposals} pending proposal(s)"
        for r in rows
    ] or ["nothing stored yet"]
    text = "\n".join(lines)
    if len(text) <= 1900:
        await ctx.author.send(text)
    else:
        await ctx.author.send(
            "Every scope's counts:", file=discord.File(io.BytesIO(text.encode()), filename="stats.txt")
        )
    if ctx.guild is not None:
        await ctx.reply("Sent you the stats of every scope by DM.")


async def run_discord(settings: Settings) -> int:
    """`hippobot run`: start the app and the bot; clear messages for a missing or bad token."""
    token = settings.discord_token.get_secret_value().strip() if settings.discord_token else ""
    if not token:
        raise DiscordSetupError(
            "no Discord token. Set HIPPOBOT_DISCORD_TOKEN (environment or .env); see the README's Discord section. "
            "For a local chat without Discord use `hippobot chat`."
        )
    app = await App.open(settings, with_llm=True)
    bot = HippoBot(app, settings)
    if settings.shard_count is not None:
        log.info(
            "running shard(s) %s of %d",
            ",".join(map(str, bot.shard_ids or range(settings.shard_count))),
            settings.shard_count,
        )
    exclusive, shared = shard_lock_keys(settings)
    try:
        async with session_locks(app.db.pool, exclusive=exclusive, shared=shared) as ours:
            if not ours:  # two sessions of one shard would each get its events: every message answered twice
                raise DiscordSetupError(already_running(settings))
            # What the last run received but never absorbed (a crash, a kill) is absorbed before new messages come.
            if absorbed := await app.absorb_backlog(progress=_log_backlog):
                log.info("absorbed %d message(s) left by the last run", absorbed)
            await bot.start(token)
    except discord.LoginFailure:
        raise DiscordSetupError(
            "Discord refused the token (HIPPOBOT_DISCORD_TOKEN): check it in the "
            "developer portal, Bot tab, and reset it if needed."
        ) from None
    except (OSError, discord.GatewayNotFound) as exc:  # aiohttp's connection errors are OSErrors
        raise DiscordSetupError(f"cannot reach Discord ({exc}); check the network.") from None
    except discord.PrivilegedIntentsRequired:
        raise DiscordSetupError(
            "enable the Message Content intent for the bot in the developer portal "
            "(Bot tab, Privileged Gateway Intents)."
        ) from None
    finally:
        try:
            await bot.close()  # also closes the app (HippoBotBase.close)
        except Exception:  # a sharded bot that never connected cannot close cleanly; the app still must
            log.debug("bot close after a failed start", exc_info=True)
        await app.close()  # idempotent
    return 0


def shard_lock_keys(settings: Settings) -> tuple[list[int], list[int]]:
    """The advisory locks a `hippobot run` holds while it runs (exclusive, shared): a process running every shard
    (no shard settings, or the count alone) holds the bot's key alone; one running some shards holds each of its
    shards' keys, and the bot's key shared with the other shards' processes. So no two processes on one database
    run the same shard, and none runs beside a process running them all."""
    if settings.shard_count is None or settings.shard_ids is None:
        return [BOT_LOCK_KEY], []
    return [BOT_LOCK_KEY + 1 + shard for shard in settings.shard_ids], [BOT_LOCK_KEY]


def already_running(settings: Settings) -> str:
    if settings.shard_count is None or settings.shard_ids is None:
        what = "this bot"
    else:
        what = "shard(s) " + ",".join(map(str, settings.shard_ids)) + " of this bot"
    return (
        f"another `hippobot run` on this database already runs {what}, so every message would be answered "
        "twice. Stop it first, or give each process its own HIPPOBOT_SHARD_IDS with the same "
        "HIPPOBOT_SHARD_COUNT (docs/discord.md, Running more than one process)."
    )


def _log_backlog(done: int, total: int) -> None:
    if done == total or done % 500 == 0:
        log.info("absorbing the last run's backlog: %d/%d", done, total)


class DiscordSetupError(Exception):
    """`hippobot run` cannot start: the message says what to fix."""
