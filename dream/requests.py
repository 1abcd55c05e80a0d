"""Is a message a request: does it ask someone (the bot, the others) for something?

An archetype is a *kind of request*: people asking for something the bot could help with. Greetings,
thanks and small talk ("the weather is grim again today", "so tired today") recur across people and
days as much as any need does, and carry content words, so recurrence and content cannot tell them
apart; the form of the sentence can. A message is a request when one of its clauses

- asks a question: a question mark, a clause opening with a wh-word (Penn tags WDT, WP, WP$, WRB:
  "how do I ...", "which way ..."), or with an auxiliary before its subject ("is the track ...",
  "can I ...", "does anyone ...");
- tells someone to do something: the message opening with a bare verb, after any greeting ("help me
  plan ...", "hey, let's ..."; later in a message a bare verb is too often a remark: "..., regret nothing");
- addresses anyone at all ("anyone got ...", "any ideas"), or says that the speaker needs or wants
  something ("I need a timeline ...", "looking for a partner ...");
- or the message ends in a plea ("..., help", "pls") or thanks in advance for an answer ("tia").

A question that seeks company rather than something ("who else has the Monday blues", "anyone else
watching ...": *else* after the one asked; "anyone watching the game tonight?": doing something now or
soon) is no request, nor are greetings to everyone ("hey everyone") and thanks ("appreciate it",
"cheers, that helped").

Since round 6 this test is the gate of the archetype analysis: only requests are clustered
(``dream.themes.screen``), so what it misses is lost to a need and what it wrongly takes is clustered.

``is_recall`` tells a request to recall an earlier conversation ("what did I tell you about my boiler",
"remember what we decided ...", "do you recall ...") from the rest: the seeded ``memory_recall`` archetype
serves that kind already, so it is never a new need (``dream.themes.screen`` leaves such messages out).

``request_kind`` names what a group of requests asks for (buying, troubleshooting, scheduling, explanations,
advice) from the same general forms (``request_acts`` folds them into the act asked for: get, do, when, so that
``dream.themes.split_by_act`` can tell where-to-buy from how-to about one object), so a theme's name says the kind of request ("exam_scheduling"),
not two of its nouns ("way_path"). A request that takes none of those forms but names a day, a date or a time to
come asks when (scheduling: "is practice still on the 14th"); and a theme whose forms are mixed but ask for one act
is named for the act (``naming_kind``: "help" for how to do something, what went wrong, what it means).

Only grammatical categories and a few general English request words are used; no word comes from a
particular server's messages. Pure CPU work (spaCy's tagger), called from a thread.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

_WH = frozenset({"WDT", "WP", "WP$", "WRB"})
_SUBJECTS = frozenset({"PRON", "NOUN", "PROPN", "DET"})
# Who a request is put to when no one is named; and the verbs of saying one needs something.
# ("everyone" is who a greeting is for, "hey everyone", not someone asked: round 6, when only requests are clustered.)
_ANYONE = frozenset({"anyone", "anybody", "someone", "somebody", "any"})
_NEED = frozenset({"need", "want", "look", "wonder", "seek", "like", "appreciate"})
_FIRST_PERSON = frozenset({"i", "we"})
# Where a clause starts inside a message ("hey, ", "... help me", "x: y").
_CLAUSE_BREAK = frozenset({",", ";", ":", ".", "!", "?", "—", "-", "(", ")"})
_LEADING = frozenset({"INTJ", "CCONJ", "ADV", "PUNCT", "SPACE", "SCONJ", "X"})
# Thanking ahead for an answer not yet given is asking for it ("..., tia").
_THANKS_AHEAD = re.compile(r"\b(thanks|thank you|thx) in advance\b|\btia\b", re.I)
# ... and so is a plea that ends the message ("the boiler shows an F28 error and won't fire up, help").
_PLEA = re.compile(r"\b(help|pls|plz|please)\W*$", re.I)
# Thanks, not a wish: "appreciate it", "(I) appreciate that".
_THANKED = frozenset({"it", "that", "this", "you", "ya", "u"})
# An activity shared now or soon ("anyone watching the game tonight?", "who's riding tomorrow"): company, not help.
_SOON = frozenset({"tonight", "today", "tomorrow", "now", "later", "weekend"})


def request_share(texts: Sequence[str]) -> float:
    """The share of ``texts`` that are requests (0.0 for none)."""
    if not texts:
        return 0.0
    return sum(are_requests(texts)) / len(texts)


def are_requests(texts: Sequence[str]) -> list[bool]:
    """Per text: is it a request (see the module docstring)."""
    from dream.themes import _nlp

    return [_is_request(text, doc) for text, doc in zip(texts, _nlp().pipe(list(texts), batch_size=64))]


def _is_request(text: str, doc: Any) -> bool:
    clauses = [c for c in _clauses(doc) if any(t.pos_ not in _LEADING for t in c)]
    if any(_seeks_company(c) for c in clauses):
        return False
    if "?" in text or _THANKS_AHEAD.search(text) or _PLEA.search(text):
        return True
    return any(_clause_asks(clause, opening=i == 0) for i, clause in enumerate(clauses))


def _clauses(doc: Any) -> list[list[Any]]:
    out: list[list[Any]] = [[]]
    for token in doc:
        if token.text in _CLAUSE_BREAK or token.lower_ == "but":
            out.append([])
        else:
            out[-1].append(token)
    return [c for c in out if c]


def _seeks_company(clause: list[Any]) -> bool:
    words = [t.lower_ for t in clause]
    if any(w in _ANYONE | {"who"} and nxt == "else" for w, nxt in zip(words, words[1:])):
        return True
    return any(t.lower_ in _ANYONE and nxt.tag_ == "VBG" for t, nxt in zip(clause, clause[1:])) and bool(
        _SOON & set(words)
    )


def _clause_asks(clause: list[Any], *, opening: bool) -> bool:
    lowered = [t.lower_ for t in clause]
    # "I need ...", "we'd like ...", "looking for ..." (the subject dropped), anywhere in the clause
    for i, t in enumerate(clause):
        if (
            t.lemma_.lower() in _NEED
            and t.pos_ in ("VERB", "AUX")
            and (i == 0 or _FIRST_PERSON & set(lowered[max(0, i - 3) : i]))
        ):
            if t.lemma_.lower() == "appreciate" and lowered[i + 1 : i + 2] and lowered[i + 1] in _THANKED:
                continue  # "appreciate it": thanks
            return True
    k = 0
    while k < len(clause) and clause[k].pos_ in _LEADING and clause[k].tag_ not in _WH:
        k += 1
    if k == len(clause):
        return False
    first = clause[k]
    if (first.tag_ in _WH and first.lower_ != "that") or first.lower_ in _ANYONE:  # "cheers, that helped": no wh-word
        return not (k + 1 < len(clause) and clause[k + 1].lower_ == "else")
    if (
        opening and first.tag_ == "VB" and first.pos_ in ("VERB", "AUX")
    ):  # imperative: "help me ...", "let's ...", "bring ..."
        return True
    if first.tag_ == "VBD" and first.lemma_.lower() not in ("do", "be"):  # "had pizza for lunch": a dropped "I"
        return False
    if first.pos_ == "AUX" or first.tag_ == "MD":  # "is the track ...", "can I ...": the subject after the verb
        rest = [t for t in clause[k + 1 :] if t.lower_ not in ("n't", "not")]
        return bool(rest) and rest[0].pos_ in _SUBJECTS and len(rest) > 1
    return False


# Asking where to get a thing, or which one to get: buying, a need of its own beside doing something with the thing
# (round 6: "where can I buy frames" and "how do I inspect a frame" were one theme). General English words of
# shopping (verbs of acquiring, the shop's side of it, and money), not words from any server's messages; "order",
# "stock", "source" and "sell" count as verbs only ("in order of appearance" is no purchase), from spaCy's parse.
_BUY_VERBS = frozenset({"buy", "purchase", "order", "preorder", "sell", "stock", "source", "afford", "shop", "restock"})
_BUYING = re.compile(
    r"\b(where|who) (can|do|does|should|would|did|to) (i|you|we|people|u|one)?\s*(get(?!\s+to\b)|find|pick up|"
    r"grab|order|buy)\b|\bwhere to (get|find|buy|order)\b|\b(which|what) (\w+ ){1,2}(should|would|do) "
    r"(i|we|you) (get|buy)\b|\b(prices?|priced|pricey|cheap\w*|expensive|suppliers?|stockists?|"
    r"retailers?|second[- ]?hand|in stock|out of stock)\b",
    re.I,
)
# What a request asks for, by its general English form (checked in this order; none: no kind is named).
_KINDS = (
    (
        "troubleshooting",
        re.compile(
            r"\b(errors?|broken|crash\w*|fail\w*|wrong|won'?t|doesn'?t|not working|keeps?|"
            r"stuck|problems?|issues?|fix\w*)\b",
            re.I,
        ),
    ),
    (
        "scheduling",
        re.compile(
            r"\bwhen (is|are|do|does|did|should|can|could|will|would)\b|\bwhat time\b|"
            r"\b(which|what) (day|date|month|week)\b|\bhow (long|soon|early)\b|\b(deadline|"
            r"schedule\w*|timetable|dates?)\b|\bfree (on|this|for|tonight)\b",
            re.I,
        ),
    ),
    (
        "explanations",
        re.compile(r"\b(difference between|explain\w*|what does \w+ mean|rules? for|why (is|do|does))\b", re.I),
    ),
    (
        "advice",
        re.compile(
            r"\b(which|best|recommend\w*|suggest\w*|tips|worth|should (i|we)|how (do|can|should|would) "
            r"(i|you|we)|how to|where (do|can|should) (i|you|we|people)|what's the \w+est)\b",
            re.I,
        ),
    ),
)
# A request that takes none of those forms but names a day, a date or a time to come ("is practice still on the
# 14th", "where's the sectional on Wednesday", "are we doing the carols this week", "how late will it go on") asks
# when or where something is on: arrangements, "scheduling". Checked last, so that a named day never turns "how do I
# ..." or "what's wrong with ..." into scheduling (round 8: 20 of 24 rehearsal-logistics requests took no form that
# says an act, so the act split had nothing to cut on). General English words of the calendar and the clock only.
_NAMES_A_TIME = re.compile(
    r"\b(mon|tues|wednes|thurs|fri|satur|sun)days?\b|\b(the|on|by|until|till|from) "
    r"(\d{1,2})(st|nd|rd|th)\b|\b(this|next|that) (week|weekend|month|term|evening|morning|"
    r"afternoon)\b|\bwhen'?s\b|\bhow late\b|\b(cancell?ed|postponed|rescheduled|called off)\b",
    re.I,
)
KIND_SEEN = 0.25  # a kind is named when at least this share of the messages take one of the forms,
KIND_SHARE = 0.6  # and this share of those take the same one


def message_kinds(texts: Sequence[str]) -> list[str | None]:
    """Per text, the kind of request its form takes ("buying", "troubleshooting", "scheduling", "explanations",
    "advice"; None: no recognisable form). Buying comes first: "my smoker broke, where can I get a new one" asks
    where to get one; a verb of acquiring counts only as a verb (spaCy's tagger: "in order of appearance" is no
    purchase)."""
    from dream.themes import _nlp

    out: list[str | None] = []
    for text, doc in zip(texts, _nlp().pipe(list(texts), batch_size=64)):
        buys = _BUYING.search(text) or any(t.pos_ == "VERB" and t.lemma_.lower() in _BUY_VERBS for t in doc)
        found: str | None = "buying" if buys else None
        found = found or next((kind for kind, pattern in _KINDS if pattern.search(text)), None)
        out.append(found or ("scheduling" if _NAMES_A_TIME.search(text) else None))
    return out


# The need a kind of request serves, for telling two needs apart inside one theme (``dream.themes.split_by_act``):
# getting a thing, doing something with it (how to do it, what went wrong, what it means), or when. "advice" without
# a "how" (which, best, should I, worth) names no act: it serves any of them ("which hive should I buy" is asked with
# a buying form or none).
_ACTS = {"buying": "get", "troubleshooting": "do", "explanations": "do", "scheduling": "when"}
_HOW = re.compile(r"\bhow (do|can|should|would|to|does|did)\b|\bwhat (should|do) (i|we) (check|do|look for)\b", re.I)


def request_acts(texts: Sequence[str]) -> list[str | None]:
    """Per text, the act it asks for: "get" (where or which to buy), "do" (how to do or fix something, what it
    means), "when" (a date, a time, how long), or None (no form that says: "which is best", a bare question)."""
    return [
        _ACTS.get(kind or "") or ("do" if kind == "advice" and _HOW.search(text) else None)
        for text, kind in zip(texts, message_kinds(texts))
    ]


def request_kind(texts: Sequence[str]) -> str | None:
    """The kind of request ``texts`` make ("buying", "troubleshooting", "scheduling", "explanations", "advice"):
    the form most of those with a recognisable form take; None when too few have one or no form leads."""
    found = message_kinds(texts)
    counts = Counter(k for k in found if k)
    seen = sum(counts.values())
    if not texts or seen < KIND_SEEN * len(texts):
        return None
    kind, n = counts.most_common(1)[0]
    return kind if n >= KIND_SHARE * seen else None


# The kind a theme is named for when its forms are mixed but ask for one act (round 9: one pattern-help need asked as
# troubleshooting, as explanations and as how-to advice, 3, 3 and 2 of 16, named ``mixed_requests`` once its two
# pieces were one theme): "how to do it, what went wrong, what it means" is asking for help with doing something.
_ACT_KINDS = {"get": "buying", "do": "help", "when": "scheduling"}


def naming_kind(texts: Sequence[str]) -> str | None:
    """The kind of request a theme's name says: ``request_kind``, or, when no form leads, the act most of those with
    an act ask for (``request_acts``; "help" for "do": how to do something, what went wrong, what it means), with the
    same shares (``KIND_SEEN`` of the texts have one, ``KIND_SHARE`` of those the same). For names only: merging
    and splitting go by the forms themselves (``request_kind``, ``request_acts``)."""
    kind = request_kind(texts)
    if kind is not None or not texts:
        return kind
    counts = Counter(a for a in request_acts(texts) if a)
    seen = sum(counts.values())
    if seen < KIND_SEEN * len(texts):
        return None
    act, n = counts.most_common(1)[0]
    return _ACT_KINDS[act] if n >= KIND_SHARE * seen else None


# Asking the bot to recall an earlier conversation: what someone in the conversation (I, we, you) said, told,
# decided... in the past ("what did I tell you", "didn't we talk about", "you mentioned earlier"), or the bot asked
# to remember ("do you remember", "remember what", "remind me what"). "how do you say ..." (present) and "someone
# said it's now on Monday" (a third person) and "I told the shop ..., is that right?" (what the speaker told someone
# else) are not; nor "remember to ..." (a reminder), nor "I
# can't remember when ..." (the speaker's memory: a question about the thing itself).
_SAID = r"(say|said|tell|told|mention(ed)?|discuss(ed)?|talk(ed)?|decide(d)?|agree(d)?|settle(d)?)"
_SAID_PAST = r"(said|told|mentioned|discussed|talked|decided|agreed|settled)"
_RECALL = (
    re.compile(
        r"\b(did|didn'?t|did not|have|haven'?t|had|hadn'?t)\s+(i|we|you|u)\s+(ever\s+|already\s+|just\s+)?"
        + _SAID
        + r"\b",
        re.I,
    ),
    re.compile(r"\b(what|which|when|where|how|who)\s+(i|we|you|u)\s+(already\s+|just\s+)?" + _SAID_PAST, re.I),
    re.compile(r"\b(you|u)\s+(already\s+|just\s+)?(said|told|mentioned)\b", re.I),  # the bot said it earlier
    re.compile(r"\b(i|we)\s+(told|mentioned\s+to)\s+(you|u)\b", re.I),
    re.compile(r"\b(i|we)\s+" + _SAID_PAST + r"\b.*\b(earlier|before|last (time|week|month)|the other day)\b", re.I),
    re.compile(r"\b(do|did|can|could|don'?t|didn'?t)\s+(you|u)\s+(still\s+)?(remember|recall)\b", re.I),
    re.compile(r"^\W*(\w+\W+){0,3}?(remember|recall)\s+(what|which|when|where|how|who|whether|if|the)\b", re.I),
    re.compile(r"\bremind me (what|which|when|where|how|who|whether|if)\b", re.I),
)
_NOT_RECALL = re.compile(r"\b(i|we)\s+(can'?t|cannot|don'?t|do not)\s+(remember|recall)\b|\bremember to\b", re.I)


def are_recall(texts: Sequence[str]) -> list[bool]:
    """Per text: does it ask the bot to recall an earlier conversation (see ``_RECALL``)? Only requests can."""
    asks = are_requests(texts)
    return [a and is_recall(t) for t, a in zip(texts, asks)]


def is_recall(text: str) -> bool:
    """Does ``text`` take the form of a request to recall an earlier conversation (not checked: that it asks)?"""
    return not _NOT_RECALL.search(text) and any(p.search(text) for p in _RECALL)
