"""Under a reply that drew on a memory: who said it, when, with jump links, and a button to forget it.

The line lists the reply's sources (bot.grounding's rule over what reached the prompt, which recall already
filtered on the asker's audience, so a restricted channel's message is never linked elsewhere). Each source
message gets a "Forget" button that runs the same forgetting as ``/memory forget`` on that message (the
message and everything derived from it, with a tombstone), for the person who said it only: anyone else is
refused. The buttons are dynamic items, so they keep working after a restart.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import discord

from bot.grounding import SourceLine, render_sources
from memory.fields import display_text
from memory.sources import SourceRef

log = logging.getLogger(__name__)

MAX_BUTTONS = 3
NOT_YOURS = "Only the person who said it can have it forgotten."
GONE = "I no longer hold that message."


def jump_link(ref: SourceRef, guild_id: int | None) -> str:
    """A Discord message's jump link; an imported or console message's id."""
    if ref.source == "discord":
        return f"https://discord.com/channels/{guild_id or '@me'}/{ref.channel_id}/{ref.external_id}"
    return f"#{ref.external_id}"


def sources_text(lines: Sequence[SourceLine], guild_id: int | None) -> str:
    """The small line under the reply ('-# from: ana, 2026-03-01 (link)')."""
    text = display_text(render_sources(lines, link=lambda ref: jump_link(ref, guild_id)))  # names are people's
    return f"-# {text}" if text else ""


class ForgetSourceButton(discord.ui.DynamicItem[discord.ui.Button], template=r"hippobot:forget:(?P<mid>\d+)"):
    """Forget one source message (by the store's id) and what was derived from it; its author only."""

    def __init__(self, message_id: int, author: str = "") -> None:
        label = f"Forget ({author[:40]})" if author else "Forget"
        super().__init__(
            discord.ui.Button(
                label=label, style=discord.ButtonStyle.secondary, emoji="🗑️", custom_id=f"hippobot:forget:{message_id}"
            )
        )
        self.message_id = message_id

    @classmethod
    async def from_custom_id(  # type: ignore[override]
        cls, interaction: discord.Interaction, item: discord.ui.Button, match: re.Match[str]
    ) -> ForgetSourceButton:
        return cls(int(match["mid"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        services: Any = getattr(interaction.client, "services", None)
        if services is None:
            await interaction.response.send_message("The bot is not running its memory.", ephemeral=True)
            return
        text = await forget_source(services, self.message_id, interaction.guild_id, interaction.user.id)
        await interaction.response.send_message(text, ephemeral=True)


async def forget_source(services: Any, message_id: int, guild_id: int | None, user_id: int) -> str:
    """What the forget button does for ``user_id``: the answer to show them (only ever ephemerally).
    ``services``: anything with ``conversations`` and ``provenance`` (the bot's Services, or the App)."""
    from bot.discord.rules import scope_for

    scope = scope_for(guild_id, user_id)
    stored = (await services.conversations.many(scope, [message_id])).get(message_id)
    if stored is None:  # forgotten already, or another server's id: nothing of it is ours to touch here
        return GONE
    if stored.is_bot or stored.author_id != str(user_id):
        log.info("forget button on message %s refused for user %s", message_id, user_id)
        return NOT_YOURS
    report = await services.provenance.forget_message(scope, message_id)
    return f"Forgotten: {report}."


def sources_view(lines: Sequence[SourceLine]) -> discord.ui.View | None:
    """One forget button per source message (at most three), or None when there are none."""
    if not lines:
        return None
    view = discord.ui.View(timeout=None)
    seen: set[int] = set()
    for line in lines:
        if line.ref.id in seen or len(seen) >= MAX_BUTTONS:
            continue
        seen.add(line.ref.id)
        view.add_item(ForgetSourceButton(line.ref.id, display_text(line.author)))
    return view
