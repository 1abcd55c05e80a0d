"""The digest: a summary of the run with a chart of archetype matches and similarity.

The text says what the run did in plain words (each step's headline: facts
consolidated, faded or contradicted, episodes replayed and faded, proposals),
the proposals to vote on and any step that failed. The chart (matplotlib,
drawn off-screen) covers the whole period the run looked at (the look-back
window, ending at the data's own last message): how many messages each
archetype served per day (stacked bars) and the mean best-archetype
similarity (line), with a legend naming every mark. It is written under the dream output directory and posted
with the summary to the dream channel, or printed by the console. A run for
one scope charts that scope's messages only, and only public ones: the dream
channel is read by the whole server, so a restricted channel's messages are
neither counted nor charted (nor named: the archetype analysis never
proposes from them).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path

from dream.cycle import DreamServices, StepReport, history_end
from memory.fields import display_text


async def digest(services: DreamServices, now: datetime) -> StepReport:
    """The run in one screen: what it did in plain words (each step's headline), the proposals it made, the
    steps that failed, and a chart of the whole period it worked on."""
    cfg = services.config
    end = await history_end(services.pool, services.scope, now)  # the data's own last weeks, not the calendar's
    days = max(cfg.lookback_days, 1)
    since = (end - timedelta(days=days)).replace(hour=0, minute=0, second=0, microsecond=0)
    rows = await services.pool.fetch(
        """SELECT date_trunc('day', am.matched_at) AS day,
                  CASE WHEN am.used_default THEN '(default plan)' ELSE ca.archetype_name END AS archetype,
                  count(*) AS n, avg(am.similarity) AS sim
           FROM archetype_matches am JOIN messages m ON m.id = am.message_id
           LEFT JOIN context_archetypes ca ON ca.id = am.archetype_id
           WHERE am.matched_at >= $1 AND am.matched_at <= $2 AND ($3::text IS NULL OR am.scope = $3::text)
             AND m.visible_in IS NULL
           GROUP BY 1, 2 ORDER BY 1""",
        since,
        now,
        services.scope,
    )
    chart = None
    if rows:
        cfg.output_dir.mkdir(parents=True, exist_ok=True)
        chart = cfg.output_dir / f"digest-{services.run_id or 'adhoc'}.png"
        await asyncio.to_thread(_draw, rows, chart, since, days)
    total = sum(r["n"] for r in rows)
    text = display_text(
        render_digest(services.run_id, services.scope, now, since, end, total, services.reports)
    )  # names archetypes, made of people's words
    if services.channel is not None:
        await services.channel.post_digest(text, chart)
    return StepReport(
        counts={"days_charted": len({r["day"] for r in rows}), "messages": total},
        notes=[f"chart: {chart}"] if chart else [],
    )


def render_digest(
    run_id: int | None,
    scope: str | None,
    now: datetime,
    since: datetime,
    end: datetime,
    messages: int,
    reports: dict[str, StepReport],
) -> str:
    """The digest's text: a title, what happened (the steps' headlines), the proposals, and failures."""
    where = f" for {scope}" if scope else ""
    lines = [
        f"Dream digest{where}, run #{run_id} ({now:%Y-%m-%d %H:%M %Z}): "
        f"{messages} message(s) from {since:%Y-%m-%d} to {end:%Y-%m-%d}"
        # the window ends at the history's last message: say so when that is not this night's (P8: thirty nightly
        # digests read alike, with nothing said in between)
        + (f" (nothing said since {end:%Y-%m-%d}: the history's last weeks)" if now - end > timedelta(days=1) else "")
    ]
    told = [f"- {r.headline}." for r in reports.values() if r.headline and not r.error]
    lines += told or ["- A quiet night: nothing consolidated, faded or proposed."]
    proposals = [note for r in reports.values() for note in r.notes if "proposal #" in note]
    if proposals:
        lines.append("Proposals to vote on: " + "; ".join(proposals))
    failed = [f"{name} ({r.error})" for name, r in reports.items() if r.error]
    if failed:
        lines.append("Failed (the rest of the run stands): " + "; ".join(failed))
    return "\n".join(lines)


def _draw(rows, path: Path, since: datetime, days: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    day_list = [since + timedelta(days=i) for i in range(days + 1)]
    index = {d.date(): i for i, d in enumerate(day_list)}
    names = sorted({r["archetype"] or "(none)" for r in rows})
    counts = {n: [0] * len(day_list) for n in names}
    weighted = [0.0] * len(day_list)
    totals = [0] * len(day_list)
    for r in rows:
        i = index.get(r["day"].date())
        if i is None:
            continue
        counts[r["archetype"] or "(none)"][i] += r["n"]
        weighted[i] += r["sim"] * r["n"]
        totals[i] += r["n"]
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
    bottom = [0] * len(day_list)
    x = list(range(len(day_list)))
    for name in names:
        ax.bar(x, counts[name], bottom=bottom, label=name)
        bottom = [b + c for b, c in zip(bottom, counts[name])]
    ax.set_ylabel("messages")
    step = max(1, len(day_list) // 15)
    ax.set_xticks(x[::step], [d.strftime("%m-%d") for d in day_list][::step], rotation=45)
    ax2 = ax.twinx()
    means = [w / t if t else float("nan") for w, t in zip(weighted, totals)]
    ax2.plot(x, means, color="black", marker="o", linewidth=1.5, label="mean similarity")
    ax2.set_ylim(0.5, 1.0)
    ax2.set_ylabel("mean best-archetype similarity")
    ax.set_title(f"Messages per day by archetype, {day_list[0]:%Y-%m-%d} to {day_list[-1]:%Y-%m-%d}")
    bars, labels = ax.get_legend_handles_labels()
    line, line_label = ax2.get_legend_handles_labels()
    ax.legend(bars + line, labels + line_label, loc="upper left", fontsize=7, ncol=2)  # every mark, named
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
