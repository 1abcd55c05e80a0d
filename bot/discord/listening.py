"""Remembering a message the bot does not answer (a channel whose memory is on).

Built on the Brain's public parts only: ``Brain.receive`` stores the message first, with its audience,
exactly as an answered one is stored; its absorption is queued on the Brain's memory writer like an
answered turn's, so every layer takes it in the background. If the writer is backed up the message
stays stored and unabsorbed, and the next start absorbs it (``absorb_backlog``).
"""

from __future__ import annotations

import logging

from bot.brain import Brain, Busy, IncomingTurn
from memory.conversation import StoredMessage

log = logging.getLogger(__name__)


async def remember_unanswered(brain: Brain, turn: IncomingTurn) -> StoredMessage:
    """Store ``turn`` and queue its absorption; raises InvalidInput (nothing stored) for an empty or too long
    message, as answering it would."""
    message = await brain.receive(turn)
    absorber = brain.absorber

    async def absorb() -> None:
        await absorber.absorb(message.id)

    try:
        brain.writer.submit(f"absorb unanswered message={message.id}", absorb)
    except Busy:
        log.info("memory writes backed up; unanswered message %s will be absorbed at the next start", message.id)
    return message
