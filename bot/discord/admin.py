"""Slash commands: admin groups (/memory, /archetype, /dream, /config) and /forget me, /whatdoyouknow.

Admin commands check at run time that the member has Manage Server or the
approver role (Discord's default permissions are only a first filter).
Errors are ephemeral; long output is sent as a file.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.console import format_archetypes, format_bundle
from bot.discord.rules import parse_message_link, scope_for
from memory.errors import MemoryStoreError

if TYPE_CHECKING:
    from bot.discord.client import HippoBotBase

INLINE_LIMIT = 1900


def is_admin(interaction: discord.Interaction, approver_role: str) -> bool:
    member = interaction.user
    if not isinstance(member, discord.Member):
        return False
    if member.guild_permissions.manage_guild:
        return True
    return any(r.name == approver_role or str(r.id) == approver_role for r in member.roles)


async def reply(interaction: discord.Interaction, text: str, *, ephemeral: bool = True) -> None:
    """Answer inline, or as a file when too long for one message."""
    send = interaction.followup.send if interaction.response.is_done() else interaction.response.send_message
    if len(text) <= INLINE_LIMIT:
        await send(text, ephemeral=ephemeral)
    else:
        await send("The answer is long; it is attached.", ephemeral=ephemeral,
                   file=discord.File(io.BytesIO(text.encode()), filename="hippobot.txt"))


class ConfirmForget(discord.ui.View):
    def __init__(self, bot: HippoBotBase, scope: str, user_id: int) -> None:
        super().__init__(timeout=120)
        self.bot, self.scope, self.user_id = bot, scope, user_id
        self.report: str | None = None

    @discord.ui.button(label="Forget everything about me", style=discord.ButtonStyle.danger)
    async def confirm(self, interaction: discord.Interaction, button: discord.ui.Button) -> None:
        if interaction.user.id != self.user_id:
            await interaction.response.send_message("This button is not for you.", ephemeral=True)
            return
        report = await self.bot.app.provenance.forget_author(self.scope, str(self.user_id))
        self.report = str(report)
        self.stop()
        await interaction.response.edit_message(content=f"Done: {report}.", view=None)

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary)
    async def cancel(self, interaction: discord.Interaction, button: discord.ui.Button) -> None:
        self.stop()
        await interaction.response.edit_message(content="Nothing was forgotten.", view=None)


class AdminCog(commands.Cog):
    memory = app_commands.Group(name="memory", description="Inspect and correct the bot's memory", guild_only=True)
    archetype = app_commands.Group(name="archetype", description="Context archetypes", guild_only=True)
    dream = app_commands.Group(name="dream", description="The dream cycle", guild_only=True)
    config = app_commands.Group(name="config", description="Bot settings", guild_only=True)
    forget = app_commands.Group(name="forget", description="Make the bot forget", guild_only=True)

    def __init__(self, bot: HippoBotBase) -> None:
        self.bot = bot

    async def _admin(self, interaction: discord.Interaction) -> bool:
        if is_admin(interaction, self.bot.settings.approver_role):
            return True
        await reply(interaction, "This command needs Manage Server or the approver role.")
        return False

    def _scope(self, interaction: discord.Interaction) -> str:
        return scope_for(interaction.guild_id, interaction.user.id)

    # --- /memory ------------------------------------------------------------------

    @memory.command(name="stats", description="How much the bot remembers in this server")
    async def memory_stats(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        scope = self._scope(interaction)
        stats = await self.bot.app.conversations.stats(scope)
        semantic = self.bot.app.brain.semantic
        if semantic is not None:
            gate = await semantic.gate_counts(scope)
            stats.update({f"graph gate {k}": v for k, v in gate.items()})
            stats["graph edges"] = await self.bot.app.db.pool.fetchval(
                "SELECT count(*) FROM kg_edges WHERE scope = $1", scope)
        pending = len(await self.bot.app.governance.list())
        await reply(interaction, "\n".join(f"{k}: {v}" for k, v in stats.items()) + f"\npending proposals: {pending}")

    @memory.command(name="recall", description="Show what the bot would recall for a text")
    async def memory_recall(self, interaction: discord.Interaction, text: str) -> None:
        if not await self._admin(interaction):
            return
        try:
            bundle = await self.bot.app.brain.context(text, self._scope(interaction), channel_id=str(interaction.channel_id))
        except MemoryStoreError as exc:
            await reply(interaction, f"⚠️ {exc}")
            return
        await reply(interaction, format_bundle(bundle))

    @memory.command(name="forget", description="Forget a member, or one message, and all derived from it")
    async def memory_forget(self, interaction: discord.Interaction, user: discord.Member | None = None,
                            message: str | None = None) -> None:
        if not await self._admin(interaction):
            return
        if (user is None) == (message is None):
            await reply(interaction, "Give either a user or a message link.")
            return
        scope = self._scope(interaction)
        if user is not None:
            report = await self.bot.app.provenance.forget_author(scope, str(user.id))
            await reply(interaction, f"{user.display_name}: {report}.")
            return
        link = parse_message_link(message or "")
        if link is None or link.guild_id != interaction.guild_id:
            await reply(interaction, "That is not a link to a message in this server.")
            return
        found = await self.bot.app.provenance.forget_transport_message("discord", str(link.channel_id), str(link.message_id))
        await reply(interaction, f"{found}." if found else "I hold nothing from that message.")

    @memory.command(name="pin", description="Pin the memory of a message so it never decays")
    async def memory_pin(self, interaction: discord.Interaction, message: str) -> None:
        if not await self._admin(interaction):
            return
        link = parse_message_link(message)
        if link is None or link.guild_id != interaction.guild_id:
            await reply(interaction, "That is not a link to a message in this server.")
            return
        stored = await self.bot.app.conversations.find_transport("discord", str(link.channel_id), str(link.message_id))
        if stored is None or stored.scope != self._scope(interaction):
            await reply(interaction, "I hold nothing from that message.")
            return
        pinned = await self.bot.app.episodes.pin(stored.scope, stored.id)
        await reply(interaction, "Pinned." if pinned else "That message has no memory to pin yet.")

    # --- /archetype -------------------------------------------------------------------

    @archetype.command(name="list", description="The archetypes and their statistics")
    async def archetype_list(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        await self.bot.app.router.refresh()
        await reply(interaction, f"```\n{format_archetypes(self.bot.app.router)}\n```")

    @archetype.command(name="show", description="One archetype in full")
    async def archetype_show(self, interaction: discord.Interaction, name: str) -> None:
        if not await self._admin(interaction):
            return
        try:
            a = await self.bot.app.archetype_store.get(name)
        except MemoryStoreError as exc:
            await reply(interaction, f"⚠️ {exc}")
            return
        examples = "\n".join(f"- {e}" for e in a.examples)
        await reply(interaction, f"**{a.name}** ({'active' if a.active else 'disabled'}): {a.description or ''}\n"
                                 f"turns {a.turns}, memories {a.vectors}, threshold {a.similarity_threshold}, "
                                 f"depth {a.triple_depth}; created by {a.created_by}, approved by {a.approved_by}\n"
                                 f"{examples}")

    async def _set_active(self, interaction: discord.Interaction, name: str, active: bool) -> None:
        if not await self._admin(interaction):
            return
        try:
            await self.bot.app.archetype_store.set_active(name, active)
        except MemoryStoreError as exc:
            await reply(interaction, f"⚠️ {exc}")
            return
        await self.bot.app.router.refresh()
        await reply(interaction, f"{name} {'enabled' if active else 'disabled'}.")

    @archetype.command(name="enable", description="Enable an archetype")
    async def archetype_enable(self, interaction: discord.Interaction, name: str) -> None:
        await self._set_active(interaction, name, True)

    @archetype.command(name="disable", description="Disable an archetype")
    async def archetype_disable(self, interaction: discord.Interaction, name: str) -> None:
        await self._set_active(interaction, name, False)

    # --- /dream, /config ---------------------------------------------------------------

    @dream.command(name="run", description="Run a dream cycle now")
    async def dream_run(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        report = await self.bot.app.dream.run(datetime.now(UTC))
        await reply(interaction, f"```\n{report.render()}\n```")

    @dream.command(name="status", description="The last dream runs and the next one")
    async def dream_status(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        rows = await self.bot.app.db.pool.fetch(
            "SELECT id, trigger, started_at, status FROM dream_runs ORDER BY id DESC LIMIT 5")
        lines = [f"#{r['id']} {r['trigger']} {r['started_at']:%Y-%m-%d %H:%M} {r['status']}" for r in rows]
        scheduler = self.bot.app.scheduler
        nxt = scheduler.next_run if scheduler else None
        lines.append(f"next run: {nxt:%Y-%m-%d %H:%M %Z}" if nxt else "next run: not scheduled")
        lines.append(f"pending proposals: {len(await self.bot.app.governance.list())}")
        await reply(interaction, "\n".join(lines))

    @config.command(name="show", description="The bot's settings (no secrets)")
    async def config_show(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        await reply(interaction, f"```json\n{json.dumps(self.bot.settings.public_view(), indent=1, default=str)}\n```")

    # --- for everyone ----------------------------------------------------------------------

    @forget.command(name="me", description="Forget everything the bot learned from you here")
    async def forget_me(self, interaction: discord.Interaction) -> None:
        view = ConfirmForget(self.bot, self._scope(interaction), interaction.user.id)
        await interaction.response.send_message(
            "This deletes every message of yours the bot stored in this server and everything derived from "
            "them. Sure?", view=view, ephemeral=True)

    @app_commands.command(name="whatdoyouknow", description="What the bot remembers about you")
    @app_commands.guild_only()
    async def whatdoyouknow(self, interaction: discord.Interaction) -> None:
        scope, user = self._scope(interaction), str(interaction.user.id)
        episodes = await self.bot.app.episodes.by_author(scope, user, 30)
        semantic = self.bot.app.brain.semantic
        facts = await semantic.about_author(scope, user, datetime.now(UTC)) if semantic else []
        if not episodes and not facts:
            await reply(interaction, "I don't remember anything you said here.")
            return
        lines = []
        if facts:
            lines.append("Facts I hold from what you said (with the messages they came from):")
            lines += [f"- {f.sentence()} (messages {', '.join(map(str, f.message_ids))}; "
                      f"recall {f.retrievability:.0%})" for f in facts]
        if episodes:
            lines.append("Conversations I remember:")
            lines += [f"- [{e.created_at:%Y-%m-%d}] {e.content.splitlines()[0]} (message {e.message_id})"
                      for e in episodes]
        await reply(interaction, "\n".join(lines))
