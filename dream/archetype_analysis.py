"""Archetype analysis (seed 003): propose archetypes for what the current ones serve badly.

Per scope (no query crosses scopes, and a proposal's examples come from one
scope; a run for one guild looks at that guild only), the messages of the
last N days whose best archetype similarity was low are clustered, clusters
that overlap in meaning are merged (one theme, one proposal), and each theme
that no open, applied or rejected proposal of that scope already covers
becomes a proposal for that scope: a readable name of content words (or one
from a capable LLM), 5-8 diverse example messages, a context configuration
reasoned from what those conversations needed, a rationale, and the
evidence. A theme is a kind of request (``dream.requests``), never chatter:
only requests are clustered, the rest set aside first (``dream.themes.screen``);
and a theme that an existing archetype already serves (its clear nearest,
which routed its messages, and which was made for that kind of message: the
theme's messages are about as like its example messages as those are like
each other, and it is no catch-all) is proposed only where its plan would
change: the rationale says what changes for those messages, in words. Archetypes whose recent
similarity has sunk get an edit proposal
with fresh examples. Proposals are only stored here; the outbox posts them.
The CPU work (clustering, merging, naming) runs in a thread: see dream.themes.

Only public messages (``visible_in IS NULL``) are analysed: a proposal is
posted to the dream channel, which the whole server reads, so nothing of it
(examples, name, description, terms, rationale, counts, the digest's note)
may come from a restricted channel. Every member of a theme is cited as a
source, and the members whose words make its name and terms are marked, so
forgetting one of them redacts the wording too (sql/019).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from dream.cycle import DreamServices, StepReport, history_end
from memory.layers.base import told
from dream.governance import EDIT_ARCHETYPE, NEW_ARCHETYPE, PENDING
from dream.themes import (
    NAME_PATTERN,
    PoorMatch,
    Recurrence,
    Theme,
    describe,
    diverse_examples,
    find_themes,
    plan_for,
    theme_name,
    unit,
)
from memory.embed import similarity

NEAR_ENOUGH = 0.75  # a centroid this similar to an archetype starts from its configuration
# Archetypes that take what nothing else does (acknowledgements; any question at all): being routed to one is no
# sign of being served, and a recurring specific need routed there is still proposed (issue 30.2, round 3: raid
# scheduling got simple_continuation's 2 turns and no memories, and was counted served).
CATCH_ALL = frozenset({"simple_continuation", "general_question"})
# An archetype was made for a theme's messages when they are, on average, at most this much less like its nearest
# example ((1 + cos) / 2, best example per message) than its examples are like each other (the same measure among
# its examples). Chosen on the dev histories (cycling, study) with the seeded archetypes: the kinds they serve sit
# 0.12 (memory recall, cycling's questions about what was said) and 0.03 (code errors, study) under their
# archetype's own; the needs nothing serves sit 0.18-0.23 under the archetype nearest them (route planning and
# exam scheduling under simple_continuation, bike repair under technical_debugging, citation help under
# memory_recall).
EXAMPLE_SLACK = 0.15
# The seeded archetype for requests to recall an earlier conversation: where a scope routes with it, such requests
# are never a new need (``Recurrence.recall_served``; round 4: a theme of "what did I tell you about my boiler").
RECALL_ARCHETYPE = "memory_recall"
_PLAN_KEYS = ("context_turns", "context_vectors", "similarity_threshold", "triple_depth")


@dataclass(frozen=True)
class Placement:
    """Where a theme's messages stand among the existing archetypes, and the plan a new one would give them."""

    nearest: str | None  # the archetype nearest the theme's centroid
    margin: float  # its lead over the second nearest (similarity scale)
    routed: dict[str, int]  # archetype -> members that got its plan today (the rest got the default plan)
    base: str | None  # the archetype whose configuration the plan starts from (None: the default plan)
    base_plan: dict[str, float]
    plan: dict[str, float]
    reasons: tuple[str, ...]
    served_by: str | None  # an archetype that already serves this kind with the same plan: not proposed
    # archetype -> (the members' fit to its examples, its examples' fit to each other), for the nearest and every
    # archetype that routed members: was it made for these messages? (``made_for``)
    fits: dict[str, tuple[float, float]] = field(default_factory=dict)


def fit_to_examples(vectors: np.ndarray, examples: np.ndarray) -> tuple[float, float]:
    """(how like ``examples`` the messages ``vectors`` are: the mean over messages of their similarity to their
    nearest example, (1 + cos) / 2; the same among the examples, each to its nearest other example)."""
    mine = float(np.mean(similarity(np.max(vectors @ examples.T, axis=1))))
    if len(examples) < 2:
        return mine, 1.0
    among = examples @ examples.T
    np.fill_diagonal(among, -np.inf)
    return mine, float(np.mean(similarity(np.max(among, axis=1))))


def made_for(name: str, fit: tuple[float, float] | None) -> bool:
    """Was archetype ``name`` made for messages with this ``fit`` (``fit_to_examples``)? Never a catch-all."""
    return name not in CATCH_ALL and fit is not None and fit[0] >= fit[1] - EXAMPLE_SLACK


def place(
    services: DreamServices,
    scope: str,
    cluster: Sequence[PoorMatch],
    centroid: np.ndarray,
    *,
    examples: Mapping[str, np.ndarray],
) -> Placement:
    """The theme's nearest archetype, what its messages get today, and the plan a new archetype would give
    them. Served: the nearest archetype leads the second by ``served_margin``, most members got its plan,
    it was made for these messages (``made_for``: no catch-all, and they are like its ``examples``, per
    archetype name the vectors of its example messages), and the plan, starting from that archetype's,
    would not change (pure CPU, with plan_for)."""
    cfg = services.config
    ranked = services.router.similarities(centroid, scope)
    nearest = ranked[0][0] if ranked else None
    margin = ranked[0][1] - ranked[1][1] if len(ranked) > 1 else (1.0 if ranked else 0.0)
    routed = Counter(m.nearest for m in cluster if m.routed and m.nearest)
    vectors = np.stack([m.vector for m in cluster])
    fits = {
        name: fit_to_examples(vectors, examples[name])
        for name in {*routed, *([nearest.name] if nearest else [])}
        if len(examples.get(name, ())) > 0
    }
    owns = (
        nearest is not None
        and margin >= cfg.served_margin
        and routed.get(nearest.name, 0) >= 0.5 * len(cluster)
        and made_for(nearest.name, fits.get(nearest.name))
    )
    if nearest is not None and (owns or (ranked[0][1] >= NEAR_ENOUGH and nearest.name not in CATCH_ALL)):
        base, base_plan = (
            nearest.name,
            {
                "context_turns": nearest.turns,
                "context_vectors": nearest.vectors,
                "similarity_threshold": nearest.similarity_threshold,
                "triple_depth": nearest.triple_depth,
            },
        )
    else:
        base, base_plan = None, dict(cfg.default_plan)
    plan, reasons = plan_for(cluster, base_plan, served=owns)
    unchanged = all(_same(plan[k], base_plan[k]) for k in _PLAN_KEYS)
    return Placement(
        nearest.name if nearest else None,
        float(margin),
        dict(routed),
        base,
        base_plan,
        plan,
        tuple(reasons),
        nearest.name if owns and unchanged and nearest else None,
        fits,
    )


def _same(a: float, b: float) -> bool:
    return abs(float(a) - float(b)) < 1e-6


async def archetype_proposals(services: DreamServices, now: datetime) -> StepReport:
    cfg = services.config
    report = StepReport(
        counts={
            "poor_matches": 0,
            "clusters": 0,
            "proposed": 0,
            "already_covered": 0,
            "already_served": 0,
            "edits_proposed": 0,
        }
    )
    await services.router.refresh()
    loop = asyncio.get_running_loop()

    def word_vectors(words: list[str]) -> np.ndarray:  # MiniLM on bare words, from the worker thread that names
        return np.asarray(asyncio.run_coroutine_threadsafe(services.embedder.embed_many(words), loop).result())

    if services.scope is not None:
        scopes = [services.scope]
    else:
        scopes = [
            r["scope"]
            for r in await services.pool.fetch(
                """SELECT DISTINCT am.scope FROM archetype_matches am JOIN messages m ON m.id = am.message_id
               WHERE am.matched_at <= $1 AND am.similarity < $2 AND am.embedding IS NOT NULL
                 AND m.visible_in IS NULL ORDER BY am.scope""",
                now,
                cfg.low_similarity,
            )
        ]
    for scope in scopes:
        # the scope's own last weeks (an imported history's, not the calendar's): matched_at is the message's time
        end = await history_end(services.pool, scope, now)
        since = end - timedelta(days=cfg.lookback_days)
        poor = await _poor_matches(services, scope, since, now)
        report.counts["poor_matches"] += len(poor)
        people = await _people_words(services, scope)
        themes = await asyncio.to_thread(
            find_themes,
            poor,
            distance=cfg.cluster_distance,
            min_size=cfg.min_cluster_size,
            merge_similarity=cfg.theme_merge_similarity,
            names=people,
            word_vectors=word_vectors,
            recurrence=Recurrence(
                people=cfg.theme_people,
                days=cfg.theme_days,
                request_share=cfg.theme_request_share,
                recall_served=any(a.name == RECALL_ARCHETYPE for a in services.router.archetypes_in(scope)),
            ),
        )
        examples = await _example_vectors(services, scope) if themes else {}
        taken = {a.name for a in await services.archetypes.list_archetypes(scope=scope)}
        taken |= {p.payload.get("name", "") for p in await services.governance.list((PENDING,), scope=scope)}
        for theme in themes:
            report.counts["clusters"] += 1
            if await services.governance.similar_decided_or_open(theme.centroid, cfg.same_idea_similarity, scope=scope):
                report.counts["already_covered"] += 1
                continue
            placement = await asyncio.to_thread(
                place, services, scope, theme.members, theme.centroid, examples=examples
            )
            if placement.served_by is not None:
                report.counts["already_served"] += 1
                report.notes.append(
                    f"{len(theme.members)} messages already served by '{placement.served_by}' "
                    "with the plan a new archetype would give them: not proposed"
                )
                continue
            proposal = await _propose_new(services, scope, theme, placement, taken, now, end, people)
            taken.add(proposal.payload["name"])
            report.counts["proposed"] += 1
            merged = f", {theme.merged_from} clusters merged" if theme.merged_from > 1 else ""
            report.notes.append(
                f"proposal #{proposal.id}: {proposal.payload['name']} ({len(theme.members)} messages{merged})"
            )
        report.counts["edits_proposed"] += await _propose_edits(services, scope, since, now, report)
    report.headline = told(
        (report.counts["proposed"], "new kind{s} of message proposed as archetypes"),
        (report.counts["edits_proposed"], "archetype{s} given fresh examples to vote on"),
    )
    return report


async def _example_vectors(services: DreamServices, scope: str) -> dict[str, np.ndarray]:
    """Per archetype ``scope`` routes with, the vectors of its example messages (what it was made for)."""
    out = {}
    for a in services.router.archetypes_in(scope):
        if a.examples:
            out[a.name] = np.asarray(await services.embedder.embed_many(list(a.examples)), dtype=np.float32)
    return out


async def _poor_matches(services: DreamServices, scope: str, since: datetime, now: datetime) -> list[PoorMatch]:
    cfg = services.config
    rows = await services.pool.fetch(
        """SELECT am.message_id, am.similarity, am.embedding, ca.archetype_name, m.content, m.channel_id, m.author_id,
                  am.matched_at, am.used_default
           FROM archetype_matches am
           JOIN messages m ON m.id = am.message_id
           LEFT JOIN context_archetypes ca ON ca.id = am.archetype_id
           WHERE am.scope = $1 AND m.scope = $1 AND am.matched_at BETWEEN $2 AND $3
             AND am.similarity < $4 AND am.embedding IS NOT NULL AND NOT m.is_bot
             AND m.visible_in IS NULL  -- the dream channel is read by everyone: public messages only
           ORDER BY am.matched_at DESC LIMIT 5000""",
        scope,
        since,
        now,
        cfg.low_similarity,
    )
    return [
        PoorMatch(
            r["message_id"],
            r["content"],
            r["channel_id"],
            r["author_id"],
            float(r["similarity"]),
            r["archetype_name"],
            r["embedding"].to_numpy(),
            r["matched_at"],
            not r["used_default"],
        )
        for r in rows
    ]


def _plan_words(plan: dict) -> str:
    """A plan as a moderator reads it: what a message routed to it loads."""
    depth = int(plan["triple_depth"])
    return (
        f"{int(plan['context_turns'])} recent turns, up to {int(plan['context_vectors'])} memories at "
        f"similarity {float(plan['similarity_threshold']):.2f} or more, graph depth {depth}: "
        + (
            "no facts from the knowledge graph"
            if depth == 0
            else f"facts up to {depth} hop{'s' if depth > 1 else ''} from what the message mentions"
        )
    )


def _todays_plans(
    services: DreamServices, scope: str, placement: Placement, by_default: int
) -> list[tuple[str, int, dict]]:
    """(who: "the default plan" or "the plan of 'name'", how many members, that plan), most members first."""
    archetypes = {a.name: a for a in services.router.archetypes_in(scope)}
    out: list[tuple[str, int, dict]] = []
    if by_default:
        out.append(("the default plan", by_default, dict(services.config.default_plan)))
    for name, n in placement.routed.items():
        a = archetypes.get(name)
        if a is not None:
            out.append(
                (
                    f"the plan of '{name}'",
                    n,
                    {
                        "context_turns": a.turns,
                        "context_vectors": a.vectors,
                        "similarity_threshold": a.similarity_threshold,
                        "triple_depth": a.triple_depth,
                    },
                )
            )
    return sorted(out, key=lambda t: -t[1]) or [("the default plan", 0, dict(services.config.default_plan))]


def _changes(before: dict, after: dict) -> str:
    """What a plan change does, in words ("recent turns 8 -> 12, memories 5 -> 8")."""
    words = {
        "context_turns": "recent turns",
        "context_vectors": "memories",
        "similarity_threshold": "memory similarity threshold",
        "triple_depth": "graph depth",
    }
    changed = [
        f"{words[k]} {_num(before[k])} -> {_num(after[k])}" for k in _PLAN_KEYS if not _same(before[k], after[k])
    ]
    return ", ".join(changed) if changed else "the same plan"


def _num(v: float) -> str:
    return f"{float(v):.2f}" if not float(v).is_integer() else str(int(v))


def _not_served(services: DreamServices, scope: str, placement: Placement) -> list[str]:
    """A line per archetype that routes some of the theme's messages today without being made for them
    (``made_for``): why being routed there is not being served."""
    archetypes = {a.name: a for a in services.router.archetypes_in(scope)}
    out = []
    for name, n in sorted(placement.routed.items(), key=lambda t: -t[1])[:2]:
        fit = placement.fits.get(name)
        if n < 2 or made_for(name, fit) or name not in archetypes:
            continue
        what = (archetypes[name].description or "").rstrip(".")
        said = f"- {n} of them are routed to '{name}'" + (f" ({what[:1].lower()}{what[1:]})" if what else "")
        if name in CATCH_ALL:
            out.append(f"{said}, which does not serve them: it is a catch-all, not made for one kind of request.")
        elif fit is not None:
            out.append(
                f"{said}, which was not made for them: they are less like its example messages "
                f"({fit[0]:.2f}) than those are like each other ({fit[1]:.2f})."
            )
    return out


async def _people_words(services: DreamServices, scope: str) -> frozenset[str]:
    """The words of the scope's people's names (display and account names, lower case): never a theme's."""
    rows = await services.pool.fetch(
        "SELECT DISTINCT author_name, author_username FROM messages WHERE scope = $1 AND NOT is_bot", scope
    )
    return frozenset(
        w
        for r in rows
        for name in (r["author_name"], r["author_username"])
        if name
        for w in re.findall(r"[a-z]+", name.lower())
        if len(w) > 1
    )


async def _propose_new(services, scope, theme: Theme, placement: Placement, taken, now, end, people):
    cluster = list(theme.members)
    terms = list(theme.terms)
    examples = [m.text for m in theme.examples]
    name = theme_name(theme.name_words, taken)
    description = describe(theme.name_words, terms)
    worded_by = set(theme.worded_by)
    if services.namer is not None:
        named = await services.namer.name(examples, terms)
        if (
            named is not None
            and NAME_PATTERN.match(named[0])
            and named[0] not in taken
            and not set(named[0].split("_")) & people
        ):  # never named after a person
            name, description = named
            worded_by |= {m.message_id for m in theme.examples}  # the model may take a word from any of them
    plan = placement.plan
    mean_sim = float(np.mean([m.similarity for m in cluster]))
    nearest_counts = Counter(m.nearest for m in cluster).most_common(1)[0][0]
    cohesion = float(np.mean(similarity(np.stack([m.vector for m in cluster]) @ theme.centroid)))
    days = services.config.lookback_days
    merged = f" (one theme: {theme.merged_from} overlapping clusters merged)" if theme.merged_from > 1 else ""
    people_n = len({m.author_id for m in cluster})
    days_n = len({m.when.date() for m in cluster if m.when is not None})
    by_default = len(cluster) - sum(placement.routed.values())
    today = _todays_plans(services, scope, placement, by_default)
    rationale = "\n".join(
        [
            f"- {len(cluster)} messages from {people_n} people on {days_n} days, in the {days} days to {end:%Y-%m-%d}, "
            f"fit no archetype well (mean similarity to their best archetype {mean_sim:.2f}, most often "
            f"'{nearest_counts}'); {by_default} of them got the default plan.",
            f"- They share a theme: {', '.join(terms) or 'see the examples'} (cohesion {cohesion:.2f}){merged}.",
            "- Today "
            + "; ".join(f"{n} of them get {who} ({_plan_words(p)})" for who, n, p in today[:2])
            + (
                f"; {sum(n for _, n, _ in today[2:])} others' plans of {len(today) - 2} other archetype(s)"
                if len(today) > 2
                else ""
            )
            + ".",
            f"- With this archetype they would load {_plan_words(plan)}; "
            + "; ".join(f"for the {n} that get {who} today that is {_changes(p, plan)}" for who, n, p in today[:2])
            + ".",
            *_not_served(services, scope, placement),
            *[f"- {r[0].upper()}{r[1:]}." for r in placement.reasons],
            f"- Configuration starts from {'the archetype ' + repr(placement.base) if placement.base else 'the default plan'}.",
        ]
    )
    cited = sorted(cluster, key=lambda m: m.similarity)[:50]
    evidence = {
        "scope": scope,
        "cluster_size": len(cluster),
        "clusters_merged": theme.merged_from,
        "mean_similarity": round(mean_sim, 4),
        "cohesion": round(cohesion, 4),
        "terms": terms,
        "messages": [
            {"message_id": m.message_id, "nearest": m.nearest, "similarity": round(m.similarity, 4)} for m in cited
        ],
    }
    payload = {"name": name, "description": description, "examples": examples, **plan}
    # Every member is a source (the whole theme came from them), not only the examples and the cited.
    sources: list[tuple[int, str | None]] = [(m.message_id, m.text) for m in theme.examples]
    quoted = {i for i, _ in sources}
    sources += [(m.message_id, None) for m in cluster if m.message_id not in quoted]
    return await services.governance.propose(
        NEW_ARCHETYPE,
        f"new archetype '{name}'",
        payload,
        rationale,
        evidence,
        centroid=theme.centroid,
        now=now,
        dream_run_id=services.run_id,
        scope=scope,
        sources=sources,
        worded_by=worded_by,
    )


async def _propose_edits(
    services: DreamServices, scope: str, since: datetime, now: datetime, report: StepReport
) -> int:
    """Archetypes whose recent similarity sank well below their average get fresh examples proposed."""
    cfg = services.config
    proposed = 0
    rows = await services.pool.fetch(
        """SELECT am.archetype_id, avg(am.similarity) AS recent, count(*) AS n
           FROM archetype_matches am JOIN messages m ON m.id = am.message_id
           WHERE am.scope = $1 AND am.matched_at BETWEEN $2 AND $3 AND NOT am.used_default AND m.visible_in IS NULL
           GROUP BY am.archetype_id HAVING count(*) >= $4""",
        scope,
        since,
        now,
        cfg.min_recent_matches,
    )
    archetypes = {a.id: a for a in await services.archetypes.list_archetypes(scope=scope, active_only=True)}
    for row in rows:
        a = archetypes.get(row["archetype_id"])
        if a is None or a.avg_similarity is None or row["recent"] >= a.avg_similarity - cfg.sunk_similarity_drop:
            continue
        recent = await services.pool.fetch(
            """SELECT am.message_id, am.similarity, m.content, am.embedding
               FROM archetype_matches am JOIN messages m ON m.id = am.message_id
               WHERE am.scope = $1 AND am.archetype_id = $2 AND am.matched_at BETWEEN $3 AND $4 AND NOT am.used_default
                 AND am.embedding IS NOT NULL AND m.visible_in IS NULL ORDER BY am.similarity LIMIT 200""",
            scope,
            a.id,
            since,
            now,
        )
        members = [
            PoorMatch(r["message_id"], r["content"], "", "", float(r["similarity"]), a.name, r["embedding"].to_numpy())
            for r in recent
        ]
        if not members:
            continue
        centroid = unit(np.mean([m.vector for m in members], axis=0))
        if await services.governance.similar_decided_or_open(centroid, cfg.same_idea_similarity, scope=scope):
            continue
        picked = await asyncio.to_thread(diverse_examples, members, centroid, 3)
        fresh_members = [m for m in picked if m.text not in a.examples]
        fresh = [m.text for m in fresh_members]
        payload = {"name": a.name, "description": a.description, "examples": [*a.examples, *fresh]}
        until = since + timedelta(days=cfg.lookback_days)
        rationale = (
            f"- '{a.name}' matched {row['n']} messages in the {cfg.lookback_days} days to {until:%Y-%m-%d} "
            "with mean "
            f"similarity {row['recent']:.2f}, below its long-run {a.avg_similarity:.2f}.\n"
            f"- Adding {len(fresh)} recent messages as examples moves its centroid toward how people "
            "phrase it now."
        )
        evidence = {
            "scope": scope,
            "messages": [
                {"message_id": m.message_id, "nearest": a.name, "similarity": round(m.similarity, 4)}
                for m in members[:50]
            ],
        }
        proposal = await services.governance.propose(
            EDIT_ARCHETYPE,
            f"edit archetype '{a.name}'",
            payload,
            rationale,
            evidence,
            centroid=centroid,
            now=now,
            dream_run_id=services.run_id,
            scope=scope,
            sources=[(m.message_id, m.text) for m in fresh_members]
            + [(m.message_id, None) for m in members[:50] if m.text not in fresh],
        )
        report.notes.append(f"proposal #{proposal.id}: edit {a.name}")
        proposed += 1
    return proposed
