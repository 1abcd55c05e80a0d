"""The digest: a summary of the run with a chart of archetype matches and similarity.

The chart (matplotlib, drawn off-screen) shows, for the last days, how many
messages each archetype served (stacked bars) and the mean best-archetype
similarity (line). It is written under the dream output directory and posted
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
    cfg = services.config
    end = await history_end(services.pool, services.scope, now)  # the data's own last weeks, not the calendar's
    since = (end - timedelta(days=cfg.chart_days)).replace(hour=0, minute=0, second=0, microsecond=0)
    rows = await services.pool.fetch(
        """SELECT date_trunc('day', am.matched_at) AS day,
                  CASE WHEN am.used_default THEN '(default plan)' ELSE ca.archetype_name END AS archetype,
                  count(*) AS n, avg(am.similarity) AS sim
           FROM archetype_matches am JOIN messages m ON m.id = am.message_id
           LEFT JOIN context_archetypes ca ON ca.id = am.archetype_id
           WHERE am.matched_at >= $1 AND am.matched_at <= $2 AND ($3::text IS NULL OR am.scope = $3::text)
             AND m.visible_in IS NULL
           GROUP BY 1, 2 ORDER BY 1""",
        since, now, services.scope,
    )
    chart = None
    if rows:
        cfg.output_dir.mkdir(parents=True, exist_ok=True)
        chart = cfg.output_dir / f"digest-{services.run_id or 'adhoc'}.png"
        await asyncio.to_thread(_draw, rows, chart, since, cfg.chart_days)
    lines = [f"Dream digest, run #{services.run_id}" + (f" for {services.scope}" if services.scope else "")
             + f" ({now:%Y-%m-%d %H:%M %Z})"]
    for name, report in services.reports.items():
        counts = ", ".join(f"{k} {v}" for k, v in report.counts.items())
        lines.append(f"- {name} ({report.seconds:.1f} s): "
                     f"{'failed (' + report.error + ')' if report.error else counts or 'done'}")
        lines.extend(f"  {note}" for note in report.notes)
    total = sum(r["n"] for r in rows)
    lines.append(f"- messages classified in the {cfg.chart_days} days to {end:%Y-%m-%d}: {total}")
    text = display_text("\n".join(lines))  # names archetypes, made of people's words
    if services.channel is not None:
        await services.channel.post_digest(text, chart)
    return StepReport(counts={"days_charted": len({r["day"] for r in rows}), "messages": total},
                      notes=[f"chart: {chart}"] if chart else [])


def _draw(rows, path: Path, since: datetime, days: int) -> None:  # type: ignore[no-untyped-def]
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
    ax.set_xticks(x[::2], [d.strftime("%m-%d") for d in day_list][::2], rotation=45)
    ax2 = ax.twinx()
    means = [w / t if t else float("nan") for w, t in zip(weighted, totals)]
    ax2.plot(x, means, color="black", marker="o", linewidth=1.5, label="mean similarity")
    ax2.set_ylim(0.5, 1.0)
    ax2.set_ylabel("mean best-archetype similarity")
    ax.set_title("Archetype matches per day")
    ax.legend(loc="upper left", fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
