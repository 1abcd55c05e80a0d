"""Reflection: rewriting the persona's snapshot from its structured traits, and deciding whether it needs approval.

The deterministic rewrite keeps the seed paragraph (who the bot is, how it
weighs evidence) and writes its views from the strongest opinions, its most
discussed topics and its disagreement rate, bounded to about 500 tokens. A
capable configured model may instead do the seed's preserve-first
reflection; its text is validated like the seed's (at least 30 characters,
at least 0.6 of the old length) and falls back to the deterministic rewrite.
A rewrite that changes the snapshot by more than ``change_limit`` (1 -
difflib ratio), or one that would carry an opinion across zero, is not
applied: it becomes a ``persona`` proposal.
"""

from __future__ import annotations

import difflib
import logging

from memory.persona.evidence import TextModel
from memory.persona.state import SEED_SNAPSHOT, Belief, PersonaState, structured_traits

log = logging.getLogger(__name__)

SNAPSHOT_CHARS = 2500  # about 500 tokens
MIN_RETENTION = 0.6


def describe(topic: str, b: Belief) -> str:
    """One opinion in words, with its confidence."""
    p = b.position
    lean = (
        "strongly favour"
        if p >= 0.6
        else "favour"
        if p >= 0.25
        else "lean towards"
        if p > 0
        else "am strongly against"
        if p <= -0.6
        else "am against"
        if p <= -0.25
        else "lean against"
    )
    sure = "confident" if b.confidence >= 0.6 else "fairly sure" if b.confidence >= 0.3 else "tentative"
    return f"I {lean} {topic} ({p:+.2f}, {sure}, {b.evidence} piece{'s' if b.evidence != 1 else ''} of evidence)"


def deterministic_snapshot(state: PersonaState) -> str:
    parts = [SEED_SNAPSHOT]
    opinions = state.strongest(5)
    if opinions:
        parts.append("My views so far: " + "; ".join(describe(t, b) for t, b in opinions) + ".")
    topics = sorted(state.engagement.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    if topics:
        parts.append("People here talk with me most about " + ", ".join(t for t, _ in topics) + ".")
    if state.disagreement_events:
        parts.append(
            f"When someone's view differs from mine I disagree about {state.disagreement_rate:.0%} "
            "of the time, and I say why."
        )
    return " ".join(parts)[:SNAPSHOT_CHARS]


def valid(old: str, new: str) -> bool:
    """The seed's check: at least 30 characters, and at least 0.6 of the old length."""
    return len(new) >= 30 and (not old or len(new) / len(old) >= MIN_RETENTION)


def change_share(old: str, new: str) -> float:
    """How much of the snapshot a rewrite changes (0 same, 1 entirely new)."""
    return 1.0 - difflib.SequenceMatcher(None, old, new, autojunk=False).ratio()


async def llm_snapshot(llm: TextModel, state: PersonaState) -> str | None:
    """The seed's preserve-first reflection by a capable model; None when it fails or is invalid."""
    prompt = (
        "You maintain the self-description of a chat bot. PRESERVE what is still true in the current "
        "description, INTEGRATE the new insights, keep it specific, first person, under 400 words. "
        "Do not invent opinions that the traits do not show.\n"
        f"Current description:\n{state.snapshot}\n\nTraits:\n{structured_traits(state)}\n\n"
        "Insights since the last reflection:\n"
        + "\n".join(f"- {i}" for i in state.pending_insights[-10:])
        + "\n\nNew description:"
    )
    if llm.uses_chat_template:
        prompt = llm.render_chat([{"role": "user", "content": prompt}])
    try:
        text = (await llm.generate(prompt, max_new_tokens=500).complete()).strip()
    except Exception:
        log.warning("LLM reflection failed", exc_info=True)
        return None
    text = text[:SNAPSHOT_CHARS]
    return text if valid(state.snapshot, text) else None
