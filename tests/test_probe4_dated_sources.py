"""A date answer names the memory it came from, not every memory of that day (found by the new-user probe: "When
did I adopt Pico?" -> "On 12 March 2026." was shown three sources, two of them about other things said that day;
the date's words are in each)."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.grounding import ground
from memory.layers.base import MemoryItem
from memory.sources import SourceRef

DAY = datetime(2026, 3, 12, 18, 0, tzinfo=UTC)


def _item(text: str, rid: int) -> MemoryItem:
    return MemoryItem("episode", 0.9, text, text, (rid,), DAY, sources=(SourceRef(rid, f"x{rid}", "c1", "console"),))


def test_a_date_answer_is_sourced_to_the_memory_about_what_was_asked() -> None:
    items = [
        _item("ana: the bakery on Rua Direita closed", 1),
        _item("ana: we adopted Pico today!", 2),
        _item("bo: rain all day here", 3),
    ]
    g = ground("On 12 March 2026.", "When did I adopt Pico?", items)
    assert [i.message_ids for i in g.items] == [(2,)]


def test_with_no_memory_about_the_question_every_holder_of_the_answer_still_counts() -> None:
    items = [_item("ana: the bakery on Rua Direita closed", 1), _item("bo: rain all day here", 3)]
    g = ground("On 12 March 2026.", "When did I adopt Pico?", items)
    assert [i.message_ids for i in g.items] == [(1,), (3,)], "grounded as before: the rule only picks among them"


def test_beside_a_memory_about_the_question_one_about_something_else_grounds_nothing() -> None:
    """P5: "who is getting married?" got "Julia." from "My wife Julia is a pilot.", beside alex's line about his
    sister's wedding."""
    julia = _item("carl: My wife Julia is a pilot.", 4)
    maria = _item("alex: My sister Maria is getting married next Friday.", 5)
    assert ground("Julia.", "who is getting married?", [julia, maria]).items == ()
    assert ground("Julia.", "who is a pilot?", [julia, maria]).items == (julia,)


def test_a_day_counted_from_now_is_not_grounded_by_a_memorys_same_word() -> None:
    """ "When did Julia visit Lisbon?" "Yesterday." was grounded by a memory that said "yesterday" months ago:
    the reply's yesterday is the asker's, the memory's the speaker's (whose day the prompt shows beside it)."""
    from bot.grounding import NOT_TOLD, grounded_or_not_told

    porto = _item("ana: Julia got back from Porto yesterday", 1)
    assert grounded_or_not_told("Yesterday.", "When did Julia visit Lisbon?", [porto]) == NOT_TOLD
    assert grounded_or_not_told("11 March 2026.", "When did Julia get back from Porto?", [porto]) == "11 March 2026."


def test_a_title_with_a_relative_day_in_it_is_not_dated() -> None:
    """ "Tomorrow, and Tomorrow, and Tomorrow" (a novel) was shown as "Tomorrow (25 March 2024), and Tomorrow (25
    March 2024), ..." and the reader answered "Tomorrow (25 March 2024)."; a capitalised word inside a sentence
    is a title or a name."""
    from memory.timeparse import dated, resolved

    said = datetime(2024, 3, 24, tzinfo=UTC)
    text = "we're reading Tomorrow, and Tomorrow, and Tomorrow. Tomorrow I start chapter two"
    assert dated(text, said) == (
        "we're reading Tomorrow, and Tomorrow, and Tomorrow. Tomorrow (25 March 2024) I start chapter two"
    )
    assert resolved("back from Porto yesterday", said) == "back from Porto 23 March 2024"
    assert resolved("back from Porto yesterday", None) == "back from Porto "
    assert "tomorrow" in __import__("bot.grounding", fromlist=["held_words"]).held_words(text, said)


def test_a_memory_that_shares_only_the_name_asked_about_grounds_nothing() -> None:
    """P6: "when is finn's flight to Cairo?" got eli's "December 18.", its sources three of finn's messages of 1
    December that say nothing of a flight: each held finn (its speaker) and December (its date)."""
    finn = [_item("finn: I live at 12 Baker Street", 1), _item("finn: I moved from Dublin to Cork last month", 2)]
    eli = _item("eli: My flight to Cairo leaves on December 18 at 7am.", 4)
    assert ground("December 18.", "when is finn's flight to Cairo?", [*finn, eli], named={"finn"}).items == ()
    assert ground("12 March 2026.", "when did finn get a car?", finn, named={"finn"}).items != (), (
        "no memory holds a car: a date of finn's may still answer (a paraphrase: he said 'a Golf')"
    )
    flight = _item("finn: my flight to Cairo is on December 18", 3)
    assert ground("December 18.", "when is finn's flight to Cairo?", [*finn, flight], named={"finn"}).items == (flight,)
