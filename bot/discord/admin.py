"""Slash commands: admin groups (/memory, /archetype, /dream with /dream channel, /config), /forget me,
/whatdoyouknow and, for everyone, /memory optout|optin|mine|export (/channel is in channels.py, /stop in
chat.py; the pages and the export's delivery are in mine.py).

Admin commands act on the guild they run in and show only its data; the
bot's owner sees everything through `!hippobot` prefix commands. They check
at run time that the member is an approver, by the one rule Governance votes
with (Discord's default permissions are only a first filter). `/forget me`
and `/whatdoyouknow`, `/memory mine` and `/memory export` also work in DMs, for the DM scope (so the /memory group
is offered in DMs; its admin commands answer there that they need a server). Errors are
ephemeral; long output is sent as a file.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord.common import digest_for, dm_or_guild, is_admin, reply, visible_channel
from bot.discord.mine import Pager, export_filename, link_for, mine_pages, send_export
from bot.discord.rules import guild_settings_view, parse_message_link, scope_for, source_label
from dream.governance import PENDING
from memory.archetypes import Archetype
from memory.errors import MemoryStoreError
from memory.fields import display_text
from memory.layers.weights import AdapterError, WeightsLayer
from memory.mine import Holdings, export_documents
from memory.recall import ContextBundle

if TYPE_CHECKING:
    from bot.discord.client import HippoBotBase
    from bot.discord.services import Services

log = logging.getLogger(__name__)


class ConfirmForget(discord.ui.View):
    def __init__(self, services: Services, scope: str, user_id: int) -> None:
        super().__init__(timeout=120)
        self.services, self.scope, self.user_id = services, scope, user_id
        self.report: str | None = None

    @discord.ui.button(label="Forget everything about me", style=discord.ButtonStyle.danger)
    async def confirm(self, interaction: discord.Interaction, button: discord.ui.Button) -> None:
        if interaction.user.id != self.user_id:
            await interaction.response.send_message("This button is not for you.", ephemeral=True)
            return
        self.stop()
        # answer (and take the buttons away) before the work, which may outlast Discord's 3 seconds
        await interaction.response.edit_message(content="Forgetting…", view=None)
        report = await self.services.provenance.forget_author(self.scope, str(self.user_id))
        self.report = str(report)
        await interaction.edit_original_response(content=f"Done: {report}.")

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary)
    async def cancel(self, interaction: discord.Interaction, button: discord.ui.Button) -> None:
        self.stop()
        await interaction.response.edit_message(content="Nothing was forgotten.", view=None)


class AdminCog(commands.Cog):
    memory = app_commands.Group(
        name="memory",
        description="What the bot remembers: yours for everyone, all for admins",
        allowed_contexts=dm_or_guild(),
    )  # /memory mine|export work in DMs too
    archetype = app_commands.Group(name="archetype", description="Context archetypes", guild_only=True)
    dream = app_commands.Group(name="dream", description="The dream cycle", guild_only=True)
    adapter = app_commands.Group(
        name="adapter", description="The LoRA adapter distilled from this server's memory", parent=dream
    )
    dream_channel = app_commands.Group(
        name="channel", description="Where this server's proposals and digests go", parent=dream
    )
    config = app_commands.Group(name="config", description="Bot settings", guild_only=True)
    forget = app_commands.Group(name="forget", description="Make the bot forget", allowed_contexts=dm_or_guild())

    def __init__(self, bot: HippoBotBase, services: Services) -> None:
        self.bot = bot
        self.services = services
        self.view = services.guild_view
        self.participation = services.participation
        self.dream_channels = services.dream_channels
        self.mine = services.mine

    async def _admin(self, interaction: discord.Interaction) -> bool:
        if interaction.guild_id is not None and is_admin(interaction, self.services.governance.policy):
            return True
        where = "" if interaction.guild_id is not None else ", in a server"
        await reply(interaction, f"This command needs Manage Server or the approver role{where}.")
        return False

    def _scope(self, interaction: discord.Interaction) -> str:
        return scope_for(interaction.guild_id, interaction.user.id)

    # --- /memory ------------------------------------------------------------------

    @memory.command(name="stats", description="How much the bot remembers in this server")
    async def memory_stats(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        scope = self._scope(interaction)
        stats: dict[str, object] = dict(await self.services.conversations.stats(scope))
        for layer in self.services.brain.layers:  # each layer's own figures (the seam's stats hook)
            stats.update(await layer.stats(scope))
        pending = await self.view.pending_proposals(scope)
        await reply(interaction, "\n".join(f"{k}: {v}" for k, v in stats.items()) + f"\npending proposals: {pending}")

    @memory.command(name="recall", description="Show what the bot would recall for a text")
    async def memory_recall(self, interaction: discord.Interaction, text: str) -> None:
        if not await self._admin(interaction):
            return
        try:
            bundle = await self.services.brain.context(
                text,
                self._scope(interaction),
                channel_id=str(interaction.channel_id),
                visible_channel=visible_channel(interaction),
            )
        except MemoryStoreError as exc:
            await reply(interaction, f"⚠️ {exc}")
            return
        await reply(interaction, format_recall(bundle, interaction.guild_id))

    @memory.command(name="forget", description="Forget a member, or one message, and all derived from it")
    async def memory_forget(
        self, interaction: discord.Interaction, user: discord.Member | None = None, message: str | None = None
    ) -> None:
        if not await self._admin(interaction):
            return
        if (user is None) == (message is None):
            await reply(interaction, "Give either a user or a message link.")
            return
        scope = self._scope(interaction)
        if user is not None:
            report = await self.services.provenance.forget_author(scope, str(user.id))
            await reply(interaction, f"{user.display_name}: {report}.")
            return
        link = parse_message_link(message or "")
        if link is None or link.guild_id != interaction.guild_id:
            await reply(interaction, "That is not a link to a message in this server.")
            return
        # only inside this guild's scope: a link naming this guild but another server's channel finds nothing
        found = await self.services.provenance.forget_transport_message(
            "discord", str(link.channel_id), str(link.message_id), scope=scope
        )
        await reply(interaction, f"{found}." if found else "I hold nothing from that message.")

    @memory.command(name="pin", description="Pin the memory of a message so it never decays")
    async def memory_pin(self, interaction: discord.Interaction, message: str) -> None:
        if not await self._admin(interaction):
            return
        link = parse_message_link(message)
        if link is None or link.guild_id != interaction.guild_id:
            await reply(interaction, "That is not a link to a message in this server.")
            return
        stored = await self.services.conversations.find_transport("discord", str(link.channel_id), str(link.message_id))
        if stored is None or stored.scope != self._scope(interaction):  # another server's message: not ours to touch
            await reply(interaction, "I hold nothing from that message.")
            return
        now = self.services.clock.now()
        pinned = {layer.name: await layer.pin(stored.scope, stored.id, now) for layer in self.services.brain.layers}
        held = ", ".join(f"{name} {n}" for name, n in pinned.items() if n)
        await reply(interaction, f"Pinned ({held})." if held else "That message has no memory to pin yet.")

    @memory.command(name="optout", description="Stop the bot remembering anything you say in this server")
    async def memory_optout(self, interaction: discord.Interaction) -> None:
        """For everyone: from now on nothing the person says here is stored (they may still be answered), and
        the forgetting of ``/forget me`` is offered for what was stored before."""
        if not await self._in_server(interaction):
            return
        scope = self._scope(interaction)
        new = await self.participation.opt_out(scope, str(interaction.user.id), self.services.clock.now())
        view = ConfirmForget(self.services, scope, interaction.user.id)
        await interaction.response.send_message(
            ("From now on" if new else "You had already opted out: as before,")
            + " nothing you say in this server is stored. I still answer when you talk to me, and keep neither "
            "your message nor my reply. `/memory optin` undoes this.\n"
            "Do you also want me to forget every message of yours I stored here before, and everything derived "
            "from them?",
            view=view,
            ephemeral=True,
        )

    @memory.command(name="optin", description="Let the bot remember what you say in this server again")
    async def memory_optin(self, interaction: discord.Interaction) -> None:
        if not await self._in_server(interaction):
            return
        was = await self.participation.opt_in(self._scope(interaction), str(interaction.user.id))
        await reply(
            interaction,
            "I remember what you say in this server again: what you say to me, and in channels whose memory is on."
            if was
            else "You had not opted out here.",
        )

    async def _in_server(self, interaction: discord.Interaction) -> bool:
        """Opting out is per server: DMs are always a conversation with the bot (chat.py never applies it there)."""
        if interaction.guild_id is not None:
            return True
        await reply(interaction, "Opting out works in a server. In our DMs, `/forget me` forgets what I stored.")
        return False

    @memory.command(name="mine", description="What the bot holds about you here (only you see it)")
    @app_commands.describe(page="Which page to open (Previous/Next turn the pages)")
    async def memory_mine(self, interaction: discord.Interaction, page: app_commands.Range[int, 1] = 1) -> None:
        """For everyone, about the asker only: facts, memories and messages, paged, ephemeral (memory/mine.py
        says who sees what: their own words wherever said, what others said only as this channel may see it)."""
        await interaction.response.defer(ephemeral=True, thinking=True)
        held = await self._holdings(interaction)
        pages = mine_pages(held, interaction.guild_id)
        index = min(page, len(pages)) - 1
        if len(pages) == 1:
            await interaction.followup.send(pages[0], ephemeral=True)
            return
        await interaction.followup.send(pages[index], ephemeral=True, view=Pager(pages, index, interaction.user.id))

    @memory.command(name="export", description="Send you, by DM, all the bot holds about you here as a JSON file")
    async def memory_export(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        held = await self._holdings(interaction)
        where = "in this server" if interaction.guild_id is not None else "in our DMs"
        if held.empty:
            await reply(interaction, f"I hold nothing about you {where}, so there is nothing to export.")
            return
        now = self.services.clock.now()
        try:
            documents = export_documents(held, now, link=link_for(interaction.guild_id))
        except MemoryStoreError as exc:  # one item larger than a part: cannot happen at Discord's limit
            await reply(interaction, f"⚠️ The export could not be made: {exc}.")
            return
        names = [
            export_filename(interaction.guild_id, f"{now:%Y%m%d}", n, len(documents))
            for n in range(1, len(documents) + 1)
        ]
        guild = interaction.guild
        server = f"the server {guild.name}" if guild is not None else where.removeprefix("in ")
        intro = (
            f"Everything I hold about you in {display_text(server)}: {len(held.facts)} fact(s), "
            f"{len(held.episodes)} memory(ies), {len(held.messages)} message(s), "
            f"as of {now.astimezone(UTC):%Y-%m-%d %H:%M} UTC."
        )
        await reply(interaction, await send_export(interaction.user, documents, names, intro))

    async def _holdings(self, interaction: discord.Interaction) -> Holdings:
        scope, user = self._scope(interaction), str(interaction.user.id)
        opted = (await self.participation.opted_out(scope, user)) if interaction.guild_id is not None else None
        return await self.mine.gather(scope, user, visible_channel=visible_channel(interaction), opted_out=opted)

    # --- /archetype: this guild's view, and its own switches ------------------------------

    @archetype.command(name="list", description="The archetypes this server routes with")
    async def archetype_list(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        archetypes = await self.services.archetype_store.list_archetypes(scope=self._scope(interaction))
        await reply(interaction, f"```\n{format_archetypes(archetypes)}\n```")

    @archetype.command(name="show", description="One archetype in full")
    async def archetype_show(self, interaction: discord.Interaction, name: str) -> None:
        if not await self._admin(interaction):
            return
        try:
            a = await self.services.archetype_store.get(name, scope=self._scope(interaction))
        except MemoryStoreError as exc:
            await reply(interaction, f"⚠️ {exc}")
            return
        examples = "\n".join(f"- {e}" for e in a.examples)
        switched = f"; switched here by {a.override_by}" if a.override_by else ""
        await reply(
            interaction,
            f"**{a.name}** ({'active' if a.active else 'disabled'}, "
            f"{'this server' if a.scope else 'global'}{switched}): {a.description or ''}\n"
            f"turns {a.turns}, memories {a.vectors}, threshold {a.similarity_threshold}, "
            f"depth {a.triple_depth}; created by {a.created_by}, approved by {a.approved_by}\n"
            f"{examples}",
        )

    async def _set_active(self, interaction: discord.Interaction, name: str, active: bool) -> None:
        if not await self._admin(interaction):
            return
        try:
            await self.services.archetype_store.set_override(
                self._scope(interaction), name, active, str(interaction.user.id)
            )
        except MemoryStoreError as exc:
            await reply(interaction, f"⚠️ {exc}")
            return
        await self.services.router.refresh()
        await reply(interaction, f"{name} {'enabled' if active else 'disabled'} in this server.")

    @archetype.command(name="enable", description="Enable an archetype in this server")
    async def archetype_enable(self, interaction: discord.Interaction, name: str) -> None:
        await self._set_active(interaction, name, True)

    @archetype.command(name="disable", description="Disable an archetype in this server")
    async def archetype_disable(self, interaction: discord.Interaction, name: str) -> None:
        await self._set_active(interaction, name, False)

    # --- /dream, /config: this guild only ---------------------------------------------

    @dream.command(name="run", description="Run a dream cycle over this server's memory now")
    async def dream_run(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        scope = self._scope(interaction)
        with digest_for(scope):  # its digest goes to this server's dream channel
            report = await self.services.dream.run(self.services.clock.now(), scope=scope)
        await self._flush_outbox()  # its proposals, posted now
        await reply(interaction, f"```\n{report.render()}\n```")

    async def _flush_outbox(self) -> None:
        if self.services.posting is not None:  # None: a cog built without a client has nowhere to post
            await self.services.posting.flush()

    @dream.command(name="status", description="This server's dream channel, pending proposals and last runs")
    async def dream_status(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        scope = self._scope(interaction)
        lines = [await self._dream_channel_line(interaction)]
        pending = await self.services.governance.list((PENDING,), scope=scope, now=self.services.clock.now())
        lines.append(f"pending proposals: {len(pending)}")
        lines += [f"- proposal #{p.id}: {p.title} (expires {p.expires_at:%Y-%m-%d})" for p in pending[:10]]
        if len(pending) > 10:
            lines.append(f"- … and {len(pending) - 10} more")
        runs = await self.view.dream_runs(scope)
        lines.append("last runs:" if runs else "last runs: none yet")
        lines += [
            f"#{r.id} {r.trigger} {r.started_at:%Y-%m-%d %H:%M} {r.status}"
            f"{' (this server)' if r.scope else ' (nightly, every server)'}"
            for r in runs
        ]
        nxt = self.services.next_dream_run()
        lines.append(f"next run: {nxt:%Y-%m-%d %H:%M %Z}" if nxt else "next run: not scheduled")
        await reply(interaction, "\n".join(lines))

    async def _dream_channel_line(self, interaction: discord.Interaction) -> str:
        """Where this server's proposals and digests go, and who chose it."""
        own = await self.dream_channels.get(self._scope(interaction))
        if own is not None:
            return f"dream channel: <#{own.channel_id}> (set by <@{own.set_by}> on {own.set_at:%Y-%m-%d})"
        fallback = self.bot.settings.dream_channel_id
        guild = interaction.guild
        if fallback is not None and guild is not None and fallback in {c.id for c in guild.channels}:
            return f"dream channel: <#{fallback}> (HIPPOBOT_DREAM_CHANNEL_ID, until one is set here)"
        return "dream channel: none; proposals wait until an admin runs `/dream channel set`"

    @dream_channel.command(name="set", description="Post this server's proposals and digests in a channel")
    @app_commands.describe(channel="The text channel (the bot never chats there)")
    async def dream_channel_set(self, interaction: discord.Interaction, channel: discord.TextChannel) -> None:
        if not await self._admin(interaction):
            return
        if channel.guild.id != interaction.guild_id:
            await reply(interaction, "Name a text channel of this server.")
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        who = interaction.user.display_name
        try:  # a dream channel the bot cannot post in would keep every proposal waiting: find out now
            await channel.send(
                f"🌙 This is now this server's dream channel (set by {display_text(who)}): the "
                "dream's proposals and digests are posted here, and approvers vote on them with "
                "✅ / ❌ or the buttons. I never chat here."
            )
        except discord.HTTPException as exc:
            log.warning("could not post in channel %s to make it the dream channel (HTTP %s)", channel.id, exc.status)
            await reply(
                interaction,
                f"I cannot post in {channel.mention}; let me send messages there, then try "
                "again. The dream channel is unchanged.",
            )
            return
        scope = self._scope(interaction)
        await self.dream_channels.set(scope, channel.id, str(interaction.user.id), self.services.clock.now())
        moved = await self.services.outbox.requeue(scope)  # pending proposals posted elsewhere: here now
        log.info(
            "dream channel of %s set to %s by %s (%d proposal(s) to re-post)",
            scope,
            channel.id,
            interaction.user.id,
            moved,
        )
        await self._flush_outbox()
        await reply(
            interaction, f"{channel.mention} is now this server's dream channel: proposals and digests go there."
        )

    @dream_channel.command(name="clear", description="Stop posting this server's proposals in its dream channel")
    async def dream_channel_clear(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        scope = self._scope(interaction)
        had = await self.dream_channels.clear(scope)
        await self.services.outbox.requeue(scope)  # to the fallback channel if there is one, else they wait
        await self._flush_outbox()
        log.info("dream channel of %s cleared by %s", interaction.guild_id, interaction.user.id)
        where = await self._dream_channel_line(interaction)
        await reply(
            interaction,
            ("Cleared. " if had else "This server had no dream channel of its own. ")
            + where.replace("dream channel: ", "Now: ", 1)
            + ".",
        )

    @adapter.command(name="status", description="The adapter in use here and the latest candidates")
    async def adapter_status(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        weights = self.services.brain.layer("weights")
        text = (
            await weights.report(self._scope(interaction))
            if isinstance(weights, WeightsLayer)
            else "adapters are not available"
        )
        await reply(interaction, f"```\n{text}\n```")

    @adapter.command(name="rollback", description="Stop using the adapter in use; go back to the one it replaced")
    async def adapter_rollback(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        weights = self.services.brain.layer("weights")
        if not isinstance(weights, WeightsLayer):
            await reply(interaction, "adapters are not available")
            return
        try:
            gone, back = await weights.rollback(self._scope(interaction))
        except AdapterError as exc:
            await reply(interaction, str(exc))
            return
        await reply(
            interaction,
            f"Adapter #{gone} rolled back; replies here now use "
            + (f"adapter #{back}." if back else "the base model."),
        )

    @config.command(name="show", description="The bot's settings as they apply here (no secrets)")
    async def config_show(self, interaction: discord.Interaction) -> None:
        if not await self._admin(interaction):
            return
        guild = interaction.guild
        here = {c.id for c in guild.channels} if guild is not None else set()
        view = guild_settings_view(self.bot.settings.public_view(), here)
        await reply(interaction, f"```json\n{json.dumps(view, indent=1, default=str)}\n```")

    # --- for everyone, in a server or in DMs --------------------------------------------------

    @forget.command(name="me", description="Forget everything the bot learned from you here")
    async def forget_me(self, interaction: discord.Interaction) -> None:
        where = "in this server" if interaction.guild_id is not None else "in our DMs"
        view = ConfirmForget(self.services, self._scope(interaction), interaction.user.id)
        await interaction.response.send_message(
            f"This deletes every message of yours the bot stored {where} and everything derived from them. Sure?",
            view=view,
            ephemeral=True,
        )

    @app_commands.command(name="whatdoyouknow", description="What the bot remembers about you")
    @app_commands.allowed_contexts(guilds=True, dms=True, private_channels=False)
    async def whatdoyouknow(self, interaction: discord.Interaction) -> None:
        scope, user = self._scope(interaction), str(interaction.user.id)
        # What this channel's audience may see: a restricted channel's memories are shown only there.
        audience = visible_channel(interaction)
        now = self.services.clock.now()
        sections = [
            section
            for layer in self.services.brain.layers
            if (section := await layer.held_from(scope, user, now, visible_channel=audience)) is not None
            and section.items
        ]
        if not sections:
            await reply(interaction, "I don't remember anything you said here.")
            return
        lines = []
        for section in sections:
            lines.append(f"{section.title}:")
            lines += [f"- {item.text}" for item in section.items]
        await reply(interaction, "\n".join(lines))


def format_recall(bundle: ContextBundle, guild_id: int | None) -> str:
    """What would be recalled, each item with the messages it came from, named the way people know them."""
    plan = bundle.plan
    name = plan.archetype or f"default plan (best: {plan.best_archetype or 'none'})"
    lines = [
        f"archetype: {name}  similarity {plan.similarity:.3f}",
        f"plan: turns={plan.turns} vectors={plan.vectors} threshold={plan.similarity_threshold:.2f} "
        f"triple_depth={plan.triple_depth}",
    ]
    items = bundle.items()
    if not items:
        lines.append("(no memories recalled)")
    for item in items:
        score = "-" if item.score is None else f"{item.score:.3f}"
        lines.append(f"- {item.kind} {score}: {item.text.replace(chr(10), ' / ')}")
        sources = getattr(item, "sources", ())
        if sources:
            lines.append(
                "  from "
                + ", ".join(
                    f"#{s.id} " + source_label(s.source, s.external_id, s.channel_id, guild_id) for s in sources
                )
            )
        elif item.message_ids:
            lines.append("  from " + ", ".join(f"#{i}" for i in item.message_ids))
    return "\n".join(lines)


def format_archetypes(archetypes: list[Archetype]) -> str:
    """One line per archetype as a guild sees it: global or its own, on or off, and who switched it here.

    No match statistics: a global archetype's are summed over every server.
    """
    lines = []
    for a in archetypes:
        where = "own" if a.scope else "global"
        switched = f" (switched here by {a.override_by})" if a.override_by else ""
        lines.append(
            f"{a.name:<24} {where:<6} {'on ' if a.active else 'off'} turns={a.turns:<2} "
            f"vectors={a.vectors:<2} threshold={a.similarity_threshold:.2f} depth={a.triple_depth}{switched}"
        )
    return "\n".join(lines) or "(no archetypes)"
