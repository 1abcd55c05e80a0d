"""The nightly schedule: APScheduler 3.x job settings, cron slots, and a real firing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from bot.app import App
from dream.cycle import DreamCycle, StepReport
from dream.scheduler import JOB_ID, DreamScheduler
from memory.clock import SimulatedClock


async def test_the_job_is_configured_to_run_once_per_night(app: App) -> None:
    scheduler = DreamScheduler(app.dream, hour=3, minute=30, timezone="Europe/Berlin", misfire_grace_s=1800)
    scheduler.start()
    try:
        job = scheduler._scheduler.get_job(JOB_ID)
        assert job.coalesce is True and job.max_instances == 1 and job.misfire_grace_time == 1800
        assert scheduler.next_run is not None
        nxt = scheduler.next_run.astimezone(scheduler._tz)
        assert (nxt.hour, nxt.minute) == (3, 30)
    finally:
        scheduler.shutdown()


def test_the_slot_is_the_latest_scheduled_time(app: App) -> None:
    scheduler = DreamScheduler(app.dream, hour=3, minute=0, timezone="UTC")
    assert scheduler.slot(datetime(2026, 11, 20, 2, 59, tzinfo=UTC)) == datetime(2026, 11, 19, 3, 0, tzinfo=UTC)
    assert scheduler.slot(datetime(2026, 11, 20, 3, 5, tzinfo=UTC)) == datetime(2026, 11, 20, 3, 0, tzinfo=UTC)


async def test_a_firing_runs_the_cycle_and_records_its_slot(app: App) -> None:
    async def step(services, now):
        return StepReport(counts={"ran": 1})

    scheduler = DreamScheduler(DreamCycle(app.dream.services, [("step", step)]), hour=3, minute=0, timezone="UTC")
    scheduler.start()
    try:
        scheduler._scheduler.modify_job(JOB_ID, next_run_time=datetime.now(UTC))
        for _ in range(100):
            if scheduler.last_report is not None:
                break
            await asyncio.sleep(0.05)
        assert scheduler.last_report is not None and scheduler.last_report.status == "ok"
        row = await app.db.pool.fetchrow("SELECT trigger, scheduled_for, scope FROM dream_runs")
        assert row["trigger"] == "schedule" and row["scheduled_for"] == scheduler.slot(datetime.now(UTC))
        assert row["scope"] is None, "the nightly run dreams for every scope"
    finally:
        scheduler.shutdown()


async def test_a_scheduled_run_dreams_at_the_clocks_now(app: App) -> None:
    """APScheduler fires at the wall clock's hour; the run's "now" is the app's clock's (a shifted ``--now``
    dreams in the shifted time, as every other "now" of the app does)."""
    seen: list[datetime] = []

    async def step(services, now):
        seen.append(now)
        return StepReport(counts={"ran": 1})

    clock = SimulatedClock(datetime(2027, 3, 2, 3, 0, 5, tzinfo=UTC))
    scheduler = DreamScheduler(
        DreamCycle(app.dream.services, [("step", step)]), hour=3, minute=0, timezone="UTC", clock=clock
    )
    await scheduler._run()
    assert seen == [clock.now()]
    assert await app.db.pool.fetchval("SELECT scheduled_for FROM dream_runs") == datetime(2027, 3, 2, 3, 0, tzinfo=UTC)
