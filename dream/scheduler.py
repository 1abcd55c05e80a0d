"""The nightly schedule: APScheduler 3.x on the bot's event loop."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger

from dream.cycle import DreamCycle, RunReport
from memory.clock import Clock, SystemClock

log = logging.getLogger(__name__)

JOB_ID = "hippobot-dream-cycle"


class DreamScheduler:
    def __init__(
        self,
        cycle: DreamCycle,
        *,
        hour: int,
        minute: int,
        timezone: str,
        misfire_grace_s: int = 3600,
        clock: Clock | None = None,
    ) -> None:
        self.cycle = cycle
        self._clock = clock or SystemClock()  # the app's: what "now" a scheduled run dreams at
        self._hour, self._minute, self._tz = hour, minute, ZoneInfo(timezone)
        self.trigger = CronTrigger(hour=hour, minute=minute, timezone=timezone)
        self._scheduler = AsyncIOScheduler(timezone=timezone)
        self._misfire = misfire_grace_s
        self.last_report: RunReport | None = None

    def start(self) -> None:
        self._scheduler.add_job(
            self._run,
            self.trigger,
            id=JOB_ID,
            name="dream cycle",
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=self._misfire,
        )
        self._scheduler.start()

    def shutdown(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    @property
    def next_run(self) -> datetime | None:
        job = self._scheduler.get_job(JOB_ID)
        return job.next_run_time if job else None

    def slot(self, now: datetime) -> datetime:
        """The latest scheduled time at or before ``now``: the run other processes must not repeat."""
        local = now.astimezone(self._tz)
        slot = local.replace(hour=self._hour, minute=self._minute, second=0, microsecond=0)
        if slot > local:
            slot -= timedelta(days=1)
        return slot

    async def _run(self) -> None:
        now = self._clock.now()  # the app's "now" (a shifted clock shifts the dream's), fired at the wall clock's
        self.last_report = await self.cycle.run(now, trigger="schedule", slot=self.slot(now))
        log.info("%s", self.last_report.render())
