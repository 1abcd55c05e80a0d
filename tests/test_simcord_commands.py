"""Every slash command group, in a server and in DMs, with its refusals (issue 29.1), driven through SimCord: the
real bot and cogs against a simulated Discord that resolves options, contexts and permissions as Discord does,
on the real database. (`/channel`, `/dream channel` and `/memory mine|export` have their own files.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import discord
import pytest
import simcord

from bot.app import App
from bot.discord.client import SingleShardHippoBot
from tests.fakes import ScriptedLLM
from tests.simcord_support import SimBase, said


@dataclass
class Sim(SimBase):
    guild: simcord.GuildHandle
    general: simcord.ChannelHandle
    ana: simcord.MemberActor  # an ordinary member
    mod: simcord.MemberActor  # has the approver role
    boss: simcord.MemberActor  # has Manage Server, not the role

    async def tell(self, who: simcord.MemberActor, channel: simcord.ChannelHandle, text: str) -> discord.Message:
        sent = await who.send(channel, f"{self.me.mention} {text}")
        await self.settle()
        return sent


pytestmark = pytest.mark.simcord(settle_timeout=60)

REFUSED = "needs Manage Server or the approver role"
# every command that only an admin (Manage Server or the approver role) may run, with valid options
ADMIN_COMMANDS: tuple[tuple[str, dict[str, object]], ...] = (
    ("memory stats", {}),
    ("memory recall", {"text": "cats"}),
    ("memory pin", {"message": "x"}),
    ("archetype list", {}),
    ("archetype show", {"name": "technical_debugging"}),
    ("archetype enable", {"name": "technical_debugging"}),
    ("archetype disable", {"name": "technical_debugging"}),
    ("dream run", {}),
    ("dream status", {}),
    ("dream channel clear", {}),
    ("dream adapter status", {}),
    ("dream adapter rollback", {}),
    ("config show", {}),
    ("persona reset", {}),
)
EVERYONES_IN_DMS = {
    "memory mine",
    "memory export",
    "memory optout",
    "memory optin",
    "forget me",
    "whatdoyouknow",
    "stop",
    "persona show",
    "persona history",
    "whereto",
}
GUILD_ONLY_GROUPS = ("archetype", "dream", "config", "channel")


@pytest.fixture
async def sim(simcord_env: simcord.Env, simcord_bot: SingleShardHippoBot, app: App) -> AsyncIterator[Sim]:
    env = simcord_env
    guild = env.create_guild("Hippo Hall")
    general = guild.create_text_channel("general")
    approvers = guild.create_role("hippobot-approver")
    managers = guild.create_role("managers", permissions=discord.Permissions(manage_guild=True))
    ana = guild.add_member(env.create_user("ana"))
    mod = guild.add_member(env.create_user("mod"), roles=[approvers])
    boss = guild.add_member(env.create_user("boss"), roles=[managers])
    await simcord_bot.tree.sync()
    s = Sim(env, simcord_bot, app, guild, general, ana, mod, boss)
    yield s
    await s.settle()


async def test_every_admin_command_refuses_a_member_without_permission(sim: Sim) -> None:
    await sim.tell(sim.ana, sim.general, "I keep bees")
    before = await sim.pool.fetchval("SELECT count(*) FROM messages")
    for name, options in ADMIN_COMMANDS:
        result = await sim.ana.slash(sim.general, name, **options)
        assert REFUSED in said(result) and result.ephemeral, (name, said(result))
    forget = await sim.ana.slash(sim.general, "memory forget", user=sim.mod)
    assert REFUSED in said(forget)
    assert await sim.pool.fetchval("SELECT count(*) FROM messages") == before, "nothing forgotten"
    assert await sim.pool.fetchval("SELECT count(*) FROM dream_runs") == 0, "no dream run"
    assert await sim.pool.fetchval("SELECT count(*) FROM proposals") == 0, "no persona reset proposed"
    assert await sim.pool.fetchval("SELECT count(*) FROM archetype_overrides") == 0, "no archetype toggled"


async def test_every_admin_command_answers_an_approver_and_a_manager(sim: Sim) -> None:
    for who in (sim.mod, sim.boss):
        for name, options in ADMIN_COMMANDS:
            if name in ("dream run", "persona reset") and who is sim.boss:
                continue  # each once is enough: they write
            result = await who.slash(sim.general, name, **options)
            assert result.acknowledged and REFUSED not in said(result) and said(result), (who.name, name)
            if name == "memory stats":
                assert "messages: 0" in said(result), said(result)
            if name == "config show":  # long: attached as a file, read back from Discord's CDN
                assert result.response is not None
                [attached] = result.response.attachments
                text = (await attached.read()).decode()
                assert "discord_token" in text and "database_url" in text, text


async def test_guild_only_groups_are_not_offered_in_dms_and_everyones_commands_are(sim: Sim) -> None:
    offered = set(sim.ana.user.available_commands())
    assert EVERYONES_IN_DMS <= offered, EVERYONES_IN_DMS - offered
    assert not [c for c in offered if c.split()[0] in GUILD_ONLY_GROUPS], offered
    with pytest.raises(Exception) as refused:  # Discord itself refuses a guild-only command in a DM
        await sim.ana.user.slash("dream status")
    assert type(refused.value).__module__.startswith("simcord"), refused.value


async def test_admin_memory_commands_in_dms_are_refused_with_where_to_run_them(sim: Sim) -> None:
    result = await sim.mod.user.slash("memory stats")
    assert f"{REFUSED}, in a server" in said(result), "the approver role is a server's: never in DMs"
    reset = await sim.mod.user.slash("persona reset")
    assert f"{REFUSED}, in a server" in said(reset)
    optout = await sim.ana.user.slash("memory optout")
    assert "Opting out works in a server" in said(optout)
    assert await sim.pool.fetchval("SELECT count(*) FROM memory_optouts") == 0


async def test_forget_me_in_dms_forgets_only_the_dm_scope(sim: Sim) -> None:
    await sim.ana.send_dm("my dm secret is marmalade")
    await sim.tell(sim.ana, sim.general, "my server secret is quince")
    asked = await sim.ana.user.slash("forget me")
    assert "in our DMs" in said(asked) and asked.ephemeral
    done = await sim.ana.user.click(asked.response, label="Forget everything about me")
    await sim.settle()
    report = said(done) + asked.response.content  # the confirmation edits the ephemeral question in place
    assert "forgot 2 message(s), 1 episode(s)" in report, report
    texts = {r["content"] for r in await sim.pool.fetch("SELECT content FROM messages WHERE NOT is_bot")}
    assert texts == {"my server secret is quince"}, "the server's memory of her is another scope"


async def test_whatdoyouknow_in_dms_shows_the_dm_scope_only(sim: Sim) -> None:
    await sim.ana.send_dm("I collect old maps")
    await sim.tell(sim.ana, sim.general, "I grow tomatoes")
    text = said(await sim.ana.user.slash("whatdoyouknow"))
    assert "old maps" in text and "tomatoes" not in text
    here = said(await sim.ana.slash(sim.general, "whatdoyouknow"))
    assert "tomatoes" in here and "old maps" not in here


async def test_everyones_commands_answer_in_dms(sim: Sim) -> None:
    for name, options in (
        ("stop", {}),
        ("persona show", {}),
        ("persona history", {}),
        ("whereto", {"topic": "gardening"}),
        ("memory mine", {}),
    ):
        result = await sim.ana.user.slash(name, **options)
        assert result.acknowledged and said(result) and REFUSED not in said(result), name


async def test_memory_forget_refuses_a_link_to_another_servers_message(sim: Sim, llm: ScriptedLLM) -> None:
    other = sim.env.create_guild("Elsewhere")
    lounge = other.create_text_channel("lounge")
    eve = other.add_member(sim.env.create_user("eve"))
    theirs = await sim.tell(eve, lounge, "my passport number is 555")
    link = f"https://discord.com/channels/{other.id}/{lounge.id}/{theirs.id}"
    for name, options in (("memory forget", {"message": link}), ("memory pin", {"message": link})):
        result = await sim.mod.slash(sim.general, name, **options)
        assert said(result) == "That is not a link to a message in this server.", name
    # the same ids under this server's id: a link that names this server finds nothing outside its scope
    spoofed = f"https://discord.com/channels/{sim.guild.id}/{lounge.id}/{theirs.id}"
    for name in ("memory forget", "memory pin"):
        result = await sim.mod.slash(sim.general, name, message=spoofed)
        assert said(result) == "I hold nothing from that message.", name
    assert not await sim.pool.fetchval("SELECT pinned FROM episodes WHERE content LIKE '%passport%'")
    assert await sim.pool.fetchval("SELECT count(*) FROM messages WHERE content LIKE '%passport%'") == 1
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes WHERE content LIKE '%passport%'") == 1


async def test_memory_forget_by_a_link_in_this_server_forgets_it_and_its_copies(sim: Sim) -> None:
    told = await sim.tell(sim.ana, sim.general, "my locker code is 4471")
    link = f"https://discord.com/channels/{sim.guild.id}/{sim.general.id}/{told.id}"
    result = await sim.mod.slash(sim.general, "memory forget", message=link)
    assert result.ephemeral and "forgot 2 message(s), 1 episode(s)" in said(result), said(result)
    assert await sim.pool.fetchval("SELECT count(*) FROM messages WHERE content LIKE '%4471%'") == 0
    assert await sim.pool.fetchval("SELECT count(*) FROM episodes WHERE content LIKE '%4471%'") == 0
    assert told.id in {m.id for m in sim.general.history()}, "Discord keeps the message: only the memory goes"
