"""The persona as people see it: the CLI's and Discord's text and JSON (no database, no Discord here)."""

from __future__ import annotations

from typing import Any

from memory.persona.reflection import describe
from memory.persona.state import PersonaState, structured_traits
from memory.persona.store import Version


def render(version: Version | None, *, core_identity: str = "", scope: str = "", opinions: int = 10) -> str:
    """The current persona: core identity, snapshot, traits, opinions with confidence, what waits."""
    state = version.state if version is not None else PersonaState()
    where = scope + (f" (channel {version.visible_in})" if version is not None and version.visible_in else "")
    head = (
        f"Persona of {where}, version {version.version} ({version.created_at:%Y-%m-%d %H:%M %Z}), "
        f"{state.interaction_count} interactions"
        if version is not None
        else f"Persona of {where}: not shaped by anyone yet (the seed)"
    )
    lines = [head]
    if core_identity:
        lines.append(f"Core identity (fixed): {core_identity.strip()}")
    lines += [f"Snapshot: {state.snapshot}", structured_traits(state)]
    shown = state.strongest(opinions)
    if shown:
        lines.append("Opinions:")
        lines += [f"  - {describe(t, b)}" for t, b in shown]
    if state.staged:
        lines.append(f"Staged updates (cooling): {len(state.staged)}")
    if state.held:
        lines.append(
            "Held for approval: "
            + ", ".join(f"{h.topic} {h.before:+.2f} -> {h.after:+.2f}" for h in state.held)
            + (f" (proposal #{state.pending_proposal})" if state.pending_proposal else "")
        )
    if state.recent_shifts:
        lines.append("Recent shifts: " + "; ".join(s.description for s in state.recent_shifts[-5:]))
    return "\n".join(lines)


def render_history(versions: list[Version]) -> str:
    if not versions:
        return "No persona versions yet."
    return "\n".join(f"v{v.version}  {v.created_at:%Y-%m-%d %H:%M}  {v.reason}" for v in versions)


def as_json(version: Version | None, history: list[Version] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "scope": version.scope if version else None,
        "visible_in": version.visible_in if version else None,
        "version": version.version if version else 0,
        "state": (version.state if version else PersonaState()).as_json(),
    }
    if history is not None:
        out["history"] = [
            {"version": v.version, "reason": v.reason, "created_at": v.created_at.isoformat()} for v in history
        ]
    return out
