"""Archetype analysis (seed 003): propose archetypes for what the current ones serve badly.

Per scope (no query crosses scopes, and a proposal's examples come from one
scope), the messages of the last N days whose best archetype similarity was
low are clustered (average-linkage, cosine). Each cluster large enough that
no open, applied or rejected proposal already covers becomes a proposal: a
name and description from the cluster's distinctive terms (or from a capable
LLM), 5-8 diverse example messages, a context configuration reasoned from
what those conversations needed, a rationale, and the evidence. Archetypes
whose recent similarity has sunk get an edit proposal with fresh examples.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from dream.cycle import DreamServices, StepReport
from dream.governance import EDIT_ARCHETYPE, NEW_ARCHETYPE
from memory.embed import similarity

_PAST = re.compile(r"\b(remember|earlier|last time|you said|we (discussed|talked)|before|again|previous(ly)?|yesterday)\b", re.I)
_NAME_OK = re.compile(r"^[a-z][a-z0-9_]{1,62}$")
NEAR_ENOUGH = 0.75  # a centroid this similar to an archetype starts from its configuration
_BOUNDS = {"context_turns": (1, 20), "context_vectors": (0, 15), "similarity_threshold": (0.5, 0.9), "triple_depth": (0, 3)}


@dataclass(frozen=True)
class PoorMatch:
    message_id: int
    text: str
    channel_id: str
    author_id: str
    similarity: float
    nearest: str | None
    vector: np.ndarray


async def archetype_proposals(services: DreamServices, now: datetime) -> StepReport:
    cfg = services.config
    report = StepReport(counts={"poor_matches": 0, "clusters": 0, "proposed": 0, "already_covered": 0,
                                "edits_proposed": 0})
    await services.router.refresh()
    scopes = await services.pool.fetch(
        """SELECT DISTINCT scope FROM archetype_matches
           WHERE matched_at BETWEEN $1 AND $2 AND similarity < $3 AND embedding IS NOT NULL""",
        now - timedelta(days=cfg.lookback_days), now, cfg.low_similarity,
    )
    taken = {a.name for a in await services.archetypes.list_archetypes()}
    taken |= {p.payload.get("name", "") for p in await services.governance.list(("pending",))}
    for row in scopes:
        poor = await _poor_matches(services, row["scope"], now)
        report.counts["poor_matches"] += len(poor)
        for cluster in _clusters(poor, cfg.cluster_distance, cfg.min_cluster_size):
            report.counts["clusters"] += 1
            centroid = _unit(np.mean([m.vector for m in cluster], axis=0))
            if await services.governance.similar_decided_or_open(centroid, cfg.same_idea_similarity):
                report.counts["already_covered"] += 1
                continue
            proposal = await _propose_new(services, row["scope"], cluster, poor, centroid, taken, now)
            taken.add(proposal.payload["name"])
            report.counts["proposed"] += 1
            report.notes.append(f"proposal #{proposal.id}: {proposal.payload['name']} ({len(cluster)} messages)")
        report.counts["edits_proposed"] += await _propose_edits(services, row["scope"], now, report)
    return report


async def _poor_matches(services: DreamServices, scope: str, now: datetime) -> list[PoorMatch]:
    cfg = services.config
    rows = await services.pool.fetch(
        """SELECT am.message_id, am.similarity, am.embedding, ca.archetype_name, m.content, m.channel_id, m.author_id
           FROM archetype_matches am
           JOIN messages m ON m.id = am.message_id
           LEFT JOIN context_archetypes ca ON ca.id = am.archetype_id
           WHERE am.scope = $1 AND m.scope = $1 AND am.matched_at BETWEEN $2 AND $3
             AND am.similarity < $4 AND am.embedding IS NOT NULL AND NOT m.is_bot
           ORDER BY am.matched_at DESC LIMIT 5000""",
        scope, now - timedelta(days=cfg.lookback_days), now, cfg.low_similarity,
    )
    return [
        PoorMatch(r["message_id"], r["content"], r["channel_id"], r["author_id"], float(r["similarity"]),
                  r["archetype_name"], r["embedding"].to_numpy())
        for r in rows
    ]


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def _clusters(poor: Sequence[PoorMatch], distance: float, min_size: int) -> list[list[PoorMatch]]:
    if len(poor) < min_size:
        return []
    from sklearn.cluster import AgglomerativeClustering

    labels = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage="average", distance_threshold=distance
    ).fit_predict(np.stack([m.vector for m in poor]))
    groups: dict[int, list[PoorMatch]] = defaultdict(list)
    for label, match in zip(labels, poor):
        groups[int(label)].append(match)
    # A new archetype needs variety: the same line said again and again is not a kind of message.
    distinct = {label: len({_normal(m.text) for m in g}) for label, g in groups.items()}
    return sorted((g for label, g in groups.items() if distinct[label] >= min_size), key=len, reverse=True)


def _normal(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def distinctive_terms(cluster_texts: Sequence[str], other_texts: Sequence[str], n: int = 4) -> list[str]:
    """Terms that mark the cluster against the other poorly matched messages (TF-IDF contrast)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    docs = list(cluster_texts) + list(other_texts)
    vectorizer = TfidfVectorizer(stop_words="english", token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z]{2,}\b", sublinear_tf=True)
    try:
        matrix = vectorizer.fit_transform(docs)
    except ValueError:  # nothing but stop words
        return []
    inside = np.asarray(matrix[: len(cluster_texts)].mean(axis=0)).ravel()
    outside = np.asarray(matrix[len(cluster_texts) :].mean(axis=0)).ravel() if other_texts else 0.0
    # Words that appear in several of the cluster's messages, not in one long message.
    presence = np.asarray((matrix[: len(cluster_texts)] > 0).sum(axis=0)).ravel()
    score = (inside - outside) * np.minimum(presence, 5)
    vocab = vectorizer.get_feature_names_out()
    order = np.argsort(-score)
    return [str(vocab[i]) for i in order[:n] if score[i] > 0]


def diverse_examples(cluster: Sequence[PoorMatch], centroid: np.ndarray, k: int = 8) -> list[PoorMatch]:
    """Up to k members: typical (near the centroid) yet unlike each other (maximal marginal relevance)."""
    unique: dict[str, PoorMatch] = {}
    for m in cluster:
        unique.setdefault(_normal(m.text), m)
    members = list(unique.values())
    vectors = np.stack([m.vector for m in members])
    relevance = vectors @ centroid
    chosen: list[int] = []
    while len(chosen) < min(k, len(members)):
        if chosen:
            redundancy = (vectors @ vectors[chosen].T).max(axis=1)
            score = relevance - 0.7 * redundancy
        else:
            score = relevance.copy()
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return [members[i] for i in chosen]


def plan_for(cluster: Sequence[PoorMatch], base: dict[str, float]) -> tuple[dict[str, float], list[str]]:
    """A context configuration for the cluster, from its nearest archetype's, with the reasons."""
    plan = dict(base)
    reasons: list[str] = []
    n = len(cluster)
    per_channel = Counter(m.channel_id for m in cluster)
    past = sum(1 for m in cluster if _PAST.search(m.text)) / n
    questions = sum(1 for m in cluster if m.text.rstrip().endswith("?")) / n
    repeats = 0
    by_author: dict[str, list[np.ndarray]] = defaultdict(list)
    for m in cluster:
        by_author[m.author_id].append(m.vector)
    for vectors in by_author.values():
        if len(vectors) > 1:
            sims = np.stack(vectors) @ np.stack(vectors).T
            repeats += int(((sims > 0.9).sum() - len(vectors)) // 2)
    if max(per_channel.values()) >= 3 or n / len(per_channel) >= 2.5:
        plan["context_turns"] += 4
        reasons.append(f"these conversations run over several turns ({n / len(per_channel):.1f} such messages "
                       "per channel), so more recent turns are kept")
    if repeats:
        plan["context_turns"] += 2
        plan["context_vectors"] += 3
        reasons.append(f"people repeated themselves {repeats} time(s), a sign that context was missing")
    if past >= 0.25:
        plan["context_vectors"] += 4
        plan["similarity_threshold"] -= 0.05
        plan["triple_depth"] += 1
        reasons.append(f"{past:.0%} of the messages refer to earlier conversations, so more memories are recalled")
    if questions >= 0.5 and plan["triple_depth"] < 2:
        plan["triple_depth"] += 1
        reasons.append(f"{questions:.0%} are questions, which benefit from related facts")
    for key, (lo, hi) in _BOUNDS.items():
        plan[key] = min(max(plan[key], lo), hi)
    plan["context_turns"], plan["context_vectors"], plan["triple_depth"] = (
        int(plan["context_turns"]), int(plan["context_vectors"]), int(plan["triple_depth"]))
    plan["similarity_threshold"] = round(float(plan["similarity_threshold"]), 2)
    if not reasons:
        reasons.append("the configuration of the nearest archetype fits these conversations")
    return plan, reasons


def archetype_name(terms: Sequence[str], taken: set[str]) -> str:
    words = [re.sub(r"[^a-z0-9]", "", t.lower()) for t in terms[:2]]
    name = "_".join(w for w in words if w) or "new_topic"
    if not name[0].isalpha():
        name = "topic_" + name
    name = name[:56]
    candidate, n = name, 2
    while candidate in taken or not _NAME_OK.match(candidate):
        candidate, n = f"{name}_{n}", n + 1
    return candidate


async def _propose_new(services, scope, cluster, poor, centroid, taken, now):  # type: ignore[no-untyped-def]
    ids = {m.message_id for m in cluster}
    terms = distinctive_terms([m.text for m in cluster], [m.text for m in poor if m.message_id not in ids])
    examples = [m.text for m in diverse_examples(cluster, centroid, 8)]
    name = archetype_name(terms, taken)
    description = ("Messages about " + ", ".join(terms[:3])) if terms else "A recurring kind of message"
    if services.namer is not None:
        named = await services.namer.name(examples, terms)
        if named is not None and _NAME_OK.match(named[0]) and named[0] not in taken:
            name, description = named
    ranked = services.router.similarities(centroid)
    nearest = ranked[0][0] if ranked and ranked[0][1] >= NEAR_ENOUGH else None
    # Start from a close archetype's configuration, else from the default plan.
    base = dict(services.config.default_plan) if nearest is None else {
        "context_turns": nearest.turns, "context_vectors": nearest.vectors,
        "similarity_threshold": nearest.similarity_threshold, "triple_depth": nearest.triple_depth,
    }
    plan, reasons = plan_for(cluster, base)
    mean_sim = float(np.mean([m.similarity for m in cluster]))
    nearest_counts = Counter(m.nearest for m in cluster).most_common(1)[0][0]
    cohesion = float(np.mean(similarity(np.stack([m.vector for m in cluster]) @ centroid)))
    days = services.config.lookback_days
    rationale = "\n".join([
        f"- {len(cluster)} messages in the last {days} days fit no archetype well "
        f"(mean similarity to their best archetype {mean_sim:.2f}, most often '{nearest_counts}').",
        f"- They share a theme: {', '.join(terms) or 'see the examples'} (cohesion {cohesion:.2f}).",
        *[f"- {r[0].upper()}{r[1:]}." for r in reasons],
        f"- Configuration starts from {'the close archetype ' + repr(nearest.name) if nearest else 'the default plan'}.",
    ])
    evidence = {
        "scope": scope,
        "cluster_size": len(cluster),
        "mean_similarity": round(mean_sim, 4),
        "cohesion": round(cohesion, 4),
        "terms": terms,
        "messages": [
            {"message_id": m.message_id, "nearest": m.nearest, "similarity": round(m.similarity, 4)}
            for m in sorted(cluster, key=lambda m: m.similarity)[:50]
        ],
    }
    payload = {"name": name, "description": description, "examples": examples, **plan}
    proposal = await services.governance.propose(
        NEW_ARCHETYPE, f"new archetype '{name}'", payload, rationale, evidence, centroid=centroid, now=now,
        dream_run_id=services.run_id,
    )
    if services.channel is not None:
        ref = await services.channel.post_proposal(proposal)
        if ref:
            await services.governance.set_posted_ref(proposal.id, ref)
    return proposal


async def _propose_edits(services: DreamServices, scope: str, now: datetime, report: StepReport) -> int:
    """Archetypes whose recent similarity sank well below their average get fresh examples proposed."""
    cfg = services.config
    proposed = 0
    rows = await services.pool.fetch(
        """SELECT am.archetype_id, avg(am.similarity) AS recent, count(*) AS n
           FROM archetype_matches am WHERE am.scope = $1 AND am.matched_at BETWEEN $2 AND $3 AND NOT am.used_default
           GROUP BY am.archetype_id HAVING count(*) >= $4""",
        scope, now - timedelta(days=cfg.lookback_days), now, cfg.min_recent_matches,
    )
    archetypes = {a.id: a for a in await services.archetypes.list_archetypes(active_only=True)}
    for row in rows:
        a = archetypes.get(row["archetype_id"])
        if a is None or a.avg_similarity is None or row["recent"] >= a.avg_similarity - cfg.sunk_similarity_drop:
            continue
        recent = await services.pool.fetch(
            """SELECT am.message_id, am.similarity, m.content, am.embedding
               FROM archetype_matches am JOIN messages m ON m.id = am.message_id
               WHERE am.scope = $1 AND am.archetype_id = $2 AND am.matched_at BETWEEN $3 AND $4 AND NOT am.used_default
                 AND am.embedding IS NOT NULL ORDER BY am.similarity LIMIT 200""",
            scope, a.id, now - timedelta(days=cfg.lookback_days), now,
        )
        members = [
            PoorMatch(r["message_id"], r["content"], "", "", float(r["similarity"]), a.name, r["embedding"].to_numpy())
            for r in recent
        ]
        if not members:
            continue
        centroid = _unit(np.mean([m.vector for m in members], axis=0))
        if await services.governance.similar_decided_or_open(centroid, cfg.same_idea_similarity):
            continue
        fresh = [m.text for m in diverse_examples(members, centroid, 3) if m.text not in a.examples]
        payload = {"name": a.name, "description": a.description, "examples": [*a.examples, *fresh]}
        rationale = (f"- '{a.name}' matched {row['n']} messages in the last {cfg.lookback_days} days with mean "
                     f"similarity {row['recent']:.2f}, below its long-run {a.avg_similarity:.2f}.\n"
                     f"- Adding {len(fresh)} recent messages as examples moves its centroid toward how people "
                     "phrase it now.")
        evidence = {"scope": scope, "messages": [
            {"message_id": m.message_id, "nearest": a.name, "similarity": round(m.similarity, 4)} for m in members[:50]
        ]}
        proposal = await services.governance.propose(
            EDIT_ARCHETYPE, f"edit archetype '{a.name}'", payload, rationale, evidence, centroid=centroid, now=now,
            dream_run_id=services.run_id,
        )
        report.notes.append(f"proposal #{proposal.id}: edit {a.name}")
        if services.channel is not None:
            ref = await services.channel.post_proposal(proposal)
            if ref:
                await services.governance.set_posted_ref(proposal.id, ref)
        proposed += 1
    return proposed
