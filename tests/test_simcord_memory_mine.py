"""`/memory mine` and `/memory export` (issue 29.4), driven through SimCord: the real bot and cogs against a
simulated Discord (slash commands, ephemeral replies, buttons, DMs and their attachments), on the real database."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime

import discord
import pytest
import simcord
from simcord.backend import errors as sim_errors
from simcord.http.routes import messages as sim_messages

from bot.app import App
from bot.discord.client import SingleShardHippoBot
from bot.discord.mine import mine_pages
from memory.mine import MESSAGE, HeldItem, Holdings, Source
from memory.sources import SourceRef
from tests.simcord_support import SimBase, bot_member


@dataclass
class Sim(SimBase):
    guild: simcord.GuildHandle
    general: simcord.ChannelHandle
    staff: simcord.ChannelHandle
    ana: simcord.MemberActor
    ben: simcord.MemberActor

    async def tell(self, who: simcord.MemberActor, channel: simcord.ChannelHandle, text: str) -> None:
        """Say something to the bot (a mention: answered, so stored and absorbed)."""
        await who.send(channel, f"{self.me.mention} {text}")
        await self.settle()


pytestmark = pytest.mark.simcord(settle_timeout=60)


@pytest.fixture
async def sim(simcord_env: simcord.Env, simcord_bot: SingleShardHippoBot, app: App) -> AsyncIterator[Sim]:
    env = simcord_env
    guild = env.create_guild("Hippo Hall")
    general = guild.create_text_channel("general")
    ana = guild.add_member(env.create_user("ana"))
    ben = guild.add_member(env.create_user("ben"))
    staff = guild.create_text_channel(
        "staff",
        overwrites={
            guild.default_role: discord.PermissionOverwrite(view_channel=False),
            ana: discord.PermissionOverwrite(view_channel=True),
            ben: discord.PermissionOverwrite(view_channel=True),
            bot_member(guild): discord.PermissionOverwrite(view_channel=True),
        },
    )
    await simcord_bot.tree.sync()
    s = Sim(env, simcord_bot, app, guild, general, staff, ana, ben)
    yield s
    await s.settle()


def shown(result: simcord.InteractionResult) -> simcord.results.ResponseMessage | None:
    """The message a slash command or button answered with (a deferred reply's first follow-up replaces it)."""
    return result.followups[-1] if result.followups else result.response


def said(result: simcord.InteractionResult) -> str:
    message = shown(result)
    return message.content if message is not None else ""


async def ben_says_about_ana_in_staff(sim: Sim) -> None:
    """Ben, in #staff, says something that ends up as a fact on Ana's own node (as consolidation can make)."""
    await sim.tell(sim.ben, sim.staff, "ana is planning the secret surprise party")
    pool, scope = sim.pool, str(sim.guild.id)
    message = await pool.fetchval("SELECT id FROM messages WHERE content LIKE '%surprise party%'")
    ana = await pool.fetchval(
        """INSERT INTO kg_nodes (scope, owner, name, display, kind, created_at) VALUES ($1, '', $2, 'ana', 'person',
           now()) ON CONFLICT (scope, owner, name) DO UPDATE SET display = excluded.display RETURNING id""",
        scope,
        f"user:{sim.ana.id}",
    )
    party = await pool.fetchval(
        """INSERT INTO kg_nodes (scope, owner, name, display, kind, created_at)
                                   VALUES ($1, '', 'surprisepartyplan', 'surprisepartyplan', 'entity', now())
                                   RETURNING id""",
        scope,
    )
    edge = await pool.fetchval(
        """INSERT INTO kg_edges (scope, source_id, relation, target_id, confidence, first_seen, last_seen)
           VALUES ($1, $2, 'plan', $3, 0.9, now(), now()) RETURNING id""",
        scope,
        ana,
        party,
    )
    await pool.execute(
        "INSERT INTO kg_edge_sources (edge_id, message_id, speaker_id, visible_in) VALUES ($1, $2, $3, $4)",
        edge,
        message,
        str(sim.ben.id),
        str(sim.staff.id),
    )


async def test_mine_lists_the_askers_own_memory_and_nobody_elses(sim: Sim) -> None:
    await sim.tell(sim.ana, sim.general, "I play the trumpet")
    await sim.tell(sim.ben, sim.general, "I play the cello")
    result = await sim.ana.slash(sim.general, "memory mine")
    text = said(result)
    assert result.ephemeral and "trumpet" in text and "cello" not in text
    assert "fact: ana plays trumpet" in text and "memory: ana:" in text
    link = f"https://discord.com/channels/{sim.guild.id}/{sim.general.id}/"
    assert link in text, "each item links to the message it came from"
    assert "2 item(s) (1 fact(s), 1 memory(ies), 0 other message(s))" in text, "the total, by kind"


async def test_mine_holds_nothing_from_another_server(sim: Sim) -> None:
    other = sim.env.create_guild("Elsewhere")
    lounge = other.create_text_channel("lounge")
    ana_there = other.add_member(sim.ana.user)
    await ana_there.send(lounge, f"{sim.me.mention} I collect old maps")
    await sim.settle()
    await sim.tell(sim.ana, sim.general, "I play the trumpet")
    here = said(await sim.ana.slash(sim.general, "memory mine"))
    assert "trumpet" in here and "maps" not in here
    there = said(await ana_there.slash(lounge, "memory mine"))
    assert "maps" in there and "trumpet" not in there


async def test_mine_in_public_never_shows_what_someone_else_said_about_you_in_a_restricted_channel(sim: Sim) -> None:
    await sim.tell(sim.ana, sim.staff, "I keep the rota in a blue binder")
    await ben_says_about_ana_in_staff(sim)
    public = said(await sim.ana.slash(sim.general, "memory mine"))
    assert "blue binder" in public and "🔒" in public, "her own words, marked as said in a restricted channel"
    assert "surprisepartyplan" not in public and "surprise party" not in public
    inside = said(await sim.ana.slash(sim.staff, "memory mine"))
    assert "surprisepartyplan" in inside, "in #staff its members may see what was said there"


async def test_mine_pages_with_buttons_and_a_page_option(sim: Sim) -> None:
    for n in range(8):
        await sim.tell(sim.ana, sim.general, f"I noted item {n}: " + "the hippos wallow in the warm river mud " * 6)
    first = await sim.ana.slash(sim.general, "memory mine")
    page = shown(first)
    assert page is not None and "page 1 of" in page.content and len(page.content) <= 2000
    pages = int(page.content.rsplit("page 1 of ", 1)[1].split()[0])
    assert pages > 1
    page_one = page.content
    turned = await sim.ana.click(page, label="Next")
    assert f"page 2 of {pages}" in said(turned) and len(said(turned)) <= 2000
    assert said(turned).split("\n")[1] not in page_one, "the next items"
    assert page.content == said(turned), "the same ephemeral message, turned to its next page"
    last = said(await sim.ana.slash(sim.general, "memory mine", page=pages))
    assert f"page {pages} of {pages}" in last
    assert said(await sim.ana.slash(sim.general, "memory mine", page=99)).endswith(f"page {pages} of {pages}")


async def test_mine_says_plainly_when_it_holds_nothing(sim: Sim) -> None:
    result = await sim.ana.slash(sim.general, "memory mine")
    assert result.ephemeral and "I hold nothing about you in this server" in said(result)


async def test_export_sends_a_json_file_by_dm(sim: Sim) -> None:
    await sim.tell(sim.ana, sim.general, "I play the trumpet")
    await sim.tell(sim.ben, sim.general, "I play the cello")
    result = await sim.ana.slash(sim.general, "memory export")
    assert result.ephemeral and "Sent" in said(result)
    dms = [m for m in sim.ana.user.dm_channel.history() if m.attachments]
    assert len(dms) == 1 and dms[0].attachments[0].filename.endswith(".json")
    data = json.loads(await dms[0].attachments[0].read())
    assert data["version"] == 1 and data["scope"] == str(sim.guild.id) and data["person_id"] == str(sim.ana.id)
    assert data["generated_at"] and data["opted_out"] is False
    kinds = {i["kind"] for i in data["items"]}
    assert kinds == {"fact", "episode", "message"}
    everything = json.dumps(data["items"])
    assert "trumpet" in everything and "cello" not in everything
    link = data["items"][0]["sources"][0]["link"]
    assert link.startswith(f"https://discord.com/channels/{sim.guild.id}/{sim.general.id}/")


async def test_export_with_dms_closed_says_why_and_loses_nothing(sim: Sim, monkeypatch: pytest.MonkeyPatch) -> None:
    await sim.tell(sim.ana, sim.general, "I play the trumpet")
    closed = sim.ana.user.dm_channel.id
    real = sim_messages._send_permissions

    def dms_closed(ctx, channel_id):
        if channel_id == closed:  # what Discord answers when a person's privacy settings refuse the bot's DM
            raise sim_errors.BackendError(403, 50007, "Cannot send messages to this user")
        return real(ctx, channel_id)

    monkeypatch.setattr(sim_messages, "_send_permissions", dms_closed)
    before = await sim.pool.fetchval("SELECT count(*) FROM messages")
    result = await sim.ana.slash(sim.general, "memory export")
    assert result.ephemeral and "could not send you a DM" in said(result) and "closed" in said(result)
    assert not [m for m in sim.ana.user.dm_channel.history() if m.attachments]
    assert await sim.pool.fetchval("SELECT count(*) FROM messages") == before, "nothing lost"


async def test_mine_and_export_work_in_dms_for_the_dm_scope(sim: Sim) -> None:
    await sim.ana.user.send_dm("I collect stamps")
    await sim.settle()
    await sim.tell(sim.ana, sim.general, "I play the trumpet")
    mine = await sim.ana.user.slash("memory mine")
    assert "in our DMs" in said(mine) and "stamps" in said(mine) and "trumpet" not in said(mine)
    assert "https://discord.com/channels/@me/" in said(mine)
    assert "stamps" not in said(await sim.ana.slash(sim.general, "memory mine")), "the server holds no DM"
    exported = await sim.ana.user.slash("memory export")
    assert "Sent" in said(exported)
    dms = [m for m in sim.ana.user.dm_channel.history() if m.attachments]
    data = json.loads(await dms[-1].attachments[0].read())
    assert data["scope"] == f"dm:{sim.ana.id}" and data["opted_out"] is None
    assert "stamps" in json.dumps(data["items"]) and "trumpet" not in json.dumps(data["items"])


async def test_admin_memory_commands_and_optout_still_refuse_in_dms(sim: Sim) -> None:
    stats = await sim.ana.user.slash("memory stats")
    assert "needs Manage Server or the approver role, in a server" in said(stats)
    optout = await sim.ana.user.slash("memory optout")
    assert "Opting out works in a server" in said(optout)
    assert await sim.pool.fetchval("SELECT count(*) FROM memory_optouts") == 0


async def test_mine_and_export_say_when_the_asker_opted_out(sim: Sim) -> None:
    await sim.tell(sim.ana, sim.general, "I play the trumpet")
    offer = await sim.ana.slash(sim.general, "memory optout")
    assert offer.response is not None
    await sim.ana.click(offer.response, label="Cancel")  # opted out, but what was kept stays
    assert "You opted out here" in said(await sim.ana.slash(sim.general, "memory mine"))
    await sim.ana.slash(sim.general, "memory export")
    dms = [m for m in sim.ana.user.dm_channel.history() if m.attachments]
    assert json.loads(await dms[-1].attachments[0].read())["opted_out"] is True


def test_every_page_fits_discord_and_every_item_is_on_one_page() -> None:
    when = datetime(2026, 11, 1, tzinfo=UTC)
    many = tuple(Source(SourceRef(n, f"{10**17 + n}", f"{10**17}", "discord"), when, True) for n in range(6))
    items = tuple(HeldItem(MESSAGE, f"item-{n:03d} " + "y" * 5000, when, many, n % 2 == 0, n) for n in range(60))
    pages = mine_pages(Holdings("1", "2", messages=items), 1)
    assert len(pages) > 1 and all(len(p) <= 2000 for p in pages)
    found = [f"item-{n:03d}" for n in range(60) for p in pages if f"item-{n:03d}" in p]
    assert found == [f"item-{n:03d}" for n in range(60)], "each once, in order"
    assert all(f"page {n} of {len(pages)}" in p for n, p in enumerate(pages, 1)) and "+3 more" in pages[0]
