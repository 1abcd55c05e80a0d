"""`/memory mine` and `/memory export` on Discord: pages of what the bot holds about the asker, and the export's
delivery by DM (the gathering is memory/mine.py; the commands are in admin.py's /memory group).

Pages fit Discord's 2,000 characters; every item has its date and a jump link to what it came from. The export
goes by DM, one attachment per part (memory/mine.py splits it under the 8 MiB upload limit); a closed DM
(discord.Forbidden) or any refusal is said plainly in the ephemeral reply, and nothing is changed.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable

import discord

from bot.discord.rules import jump_link
from memory.fields import display_text
from memory.mine import EPISODE, FACT, MESSAGE, HeldItem, Holdings
from memory.sources import SourceRef

log = logging.getLogger(__name__)

PAGE_LIMIT = 1900  # Discord's 2,000, less room for the page line
ITEM_TEXT_LIMIT = 300  # one item's text on a page (the export has it whole)
LINKS_PER_ITEM = 3
_LABELS = {FACT: "fact", EPISODE: "memory", MESSAGE: "message"}


def link_for(guild_id: int | None) -> Callable[[SourceRef], str | None]:
    """The jump link of a stored message of this server (or these DMs), for the export; None for imports."""

    def link(ref: SourceRef) -> str | None:
        return jump_link(guild_id, ref.channel_id, ref.external_id) if ref.source == "discord" else None

    return link


def mine_pages(held: Holdings, guild_id: int | None) -> list[str]:
    """The listing as pages of at most PAGE_LIMIT characters, each with the total and its number."""
    where = "in this server" if guild_id is not None else "in our DMs"
    items = held.listing()
    if not items:
        return [f"I hold nothing about you {where}: no facts, no memories, no messages of yours."]
    counts = {k: sum(1 for i in items if i.kind == k) for k in (FACT, EPISODE, MESSAGE)}
    head = (
        f"What I hold about you {where}: {len(items)} item(s) ({counts[FACT]} fact(s), "
        f"{counts[EPISODE]} memory(ies), {counts[MESSAGE]} other message(s)). "
        "🔒 = said in a channel only its members see. `/memory export` sends it all as a file."
    )
    if held.opted_out:
        head += "\nYou opted out here: nothing new you say is stored."
    pages: list[list[str]] = [[]]
    size = 0
    for item in items:
        line = _line(item, guild_id)
        if size + len(line) + 1 > PAGE_LIMIT - len(head) - 40 and pages[-1]:
            pages.append([])
            size = 0
        pages[-1].append(line)
        size += len(line) + 1
    return [f"{head}\n" + "\n".join(lines) + f"\n— page {n} of {len(pages)}" for n, lines in enumerate(pages, 1)]


def _line(item: HeldItem, guild_id: int | None) -> str:
    text = " ".join(display_text(item.text).split())
    if len(text) > ITEM_TEXT_LIMIT:
        text = text[: ITEM_TEXT_LIMIT - 1] + "…"
    links = [
        f"<{jump_link(guild_id, s.ref.channel_id, s.ref.external_id)}>"
        if s.ref.source == "discord"
        else f"({s.ref.source} {s.ref.external_id})"
        for s in item.sources[:LINKS_PER_ITEM]
    ]
    if len(item.sources) > LINKS_PER_ITEM:
        links.append(f"+{len(item.sources) - LINKS_PER_ITEM} more")
    lock = "🔒 " if item.restricted else ""
    return f"- [{item.created_at:%Y-%m-%d}] {lock}{_LABELS[item.kind]}: {text} " + " ".join(links)


class Pager(discord.ui.View):
    """Previous / Next over pages, for the asker only (the reply is ephemeral: nobody else sees the buttons)."""

    def __init__(self, pages: list[str], page: int, user_id: int) -> None:
        super().__init__(timeout=600)
        self.pages, self.page, self.user_id = pages, page, user_id
        self._sync()

    def _sync(self) -> None:
        self.previous.disabled = self.page <= 0
        self.next.disabled = self.page >= len(self.pages) - 1

    async def _turn(self, interaction: discord.Interaction, step: int) -> None:
        if interaction.user.id != self.user_id:
            await interaction.response.send_message("These pages are not yours.", ephemeral=True)
            return
        self.page = max(0, min(len(self.pages) - 1, self.page + step))
        self._sync()
        await interaction.response.edit_message(content=self.pages[self.page], view=self)

    @discord.ui.button(label="Previous", style=discord.ButtonStyle.secondary)
    async def previous(self, interaction: discord.Interaction, button: discord.ui.Button) -> None:
        await self._turn(interaction, -1)

    @discord.ui.button(label="Next", style=discord.ButtonStyle.secondary)
    async def next(self, interaction: discord.Interaction, button: discord.ui.Button) -> None:
        await self._turn(interaction, 1)


def export_filename(guild_id: int | None, day: str, part: int, parts: int) -> str:
    where = str(guild_id) if guild_id is not None else "dm"
    return f"hippobot-memory-{where}-{day}" + (f"-part{part}of{parts}" if parts > 1 else "") + ".json"


async def send_export(
    user: discord.User | discord.Member, documents: list[bytes], filenames: list[str], intro: str
) -> str:
    """DM the documents, one per message; what to tell the asker (sent, or why not and how far it got)."""
    sent = 0
    try:
        for n, (doc, name) in enumerate(zip(documents, filenames, strict=True), 1):
            text = intro if n == 1 else f"Part {n} of {len(documents)}."
            await user.send(text, file=discord.File(io.BytesIO(doc), filename=name))
            sent += 1
    except discord.Forbidden as exc:
        log.info("export DM to %s refused (HTTP %s, code %s)", user.id, exc.status, exc.code)
        got = f" (part(s) 1-{sent} of {len(documents)} arrived)" if sent else ""
        return (
            "I could not send you a DM: your direct messages are closed to me"
            f"{got}. Allow direct messages from this server's members (Privacy Settings), or from apps, then "
            "run `/memory export` again. Nothing was changed or forgotten."
        )
    except discord.HTTPException as exc:
        log.warning("export DM to %s failed (HTTP %s, code %s)", user.id, exc.status, exc.code)
        got = f" after part(s) 1-{sent} of {len(documents)}" if sent else ""
        return (
            f"Discord refused the export{got} (HTTP {exc.status}). Nothing was changed or forgotten; "
            "try `/memory export` again later."
        )
    parts = f" in {len(documents)} parts (each under Discord's 8 MiB limit)" if len(documents) > 1 else ""
    return f"Sent: your export is in our DMs{parts}."
