"""Abuse limits for the rating app: a per-rater submission rate limit and an optional allow-list."""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque

from .config import AppConfig
from .ratings import RatingError


class RateLimiter:
    """Sliding 60-second window per rater. Thread-safe; in memory (a restart forgives, which is fine)."""

    def __init__(self, per_minute: int, clock=time.monotonic):
        self.per_minute, self.clock = per_minute, clock
        self._hits: dict[str, deque] = defaultdict(deque)
        self._lock = threading.Lock()

    def check(self, rater: str) -> None:
        if self.per_minute <= 0:
            return
        now = self.clock()
        with self._lock:
            hits = self._hits[rater]
            while hits and now - hits[0] >= 60:
                hits.popleft()
            if len(hits) >= self.per_minute:
                wait = 60 - (now - hits[0])
                raise RatingError(
                    f"too many submissions from '{rater}': {len(hits)} in the last minute (limit {self.per_minute})",
                    f"wait {wait:.0f} s and submit again; nothing was stored",
                )
            hits.append(now)


def check_allowed(app: AppConfig, rater: str, orgs: list[str] | None = None) -> None:
    """Refuse raters outside the allow-list (when one is configured): by name, or by Hub organisation."""
    if not app.allowed_raters and not app.allowed_orgs:
        return
    if rater in app.allowed_raters:
        return
    if orgs and set(orgs) & set(app.allowed_orgs):
        return
    raise RatingError(
        f"rater '{rater}' is not on this study's allow-list",
        "ask the study owner to add your username (app.allowed_raters) or organisation (app.allowed_orgs)",
    )
