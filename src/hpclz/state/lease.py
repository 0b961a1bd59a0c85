"""Keep a blob lease alive from a background thread while a long operation holds the state lock.

A deployment can run for an hour; a lease is 15-60 s. Renewing at a third of the duration leaves
two more tries before the lease lapses if one renewal is slow or fails transiently.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

MIN_LEASE_S = 15  # Azure's bounds for a finite lease
MAX_LEASE_S = 60


def check_lease_duration(duration_s: int) -> None:
    if not MIN_LEASE_S <= duration_s <= MAX_LEASE_S:
        raise ValueError(f"lease duration must be {MIN_LEASE_S}-{MAX_LEASE_S} s, got {duration_s}")


class LeaseRenewer:
    def __init__(self, lease: Any, duration_s: int):
        check_lease_duration(duration_s)
        self._lease = lease
        self.interval_s = duration_s / 3
        self.lost: str | None = None  # why the lease was lost, once it is
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hpclz-state-lease", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def renew_now(self) -> str | None:
        """Renew at once (before a write); returns why the lease is lost, or None while it is held."""
        try:
            self._lease.renew()
        except Exception as exc:
            self.lost = getattr(exc, "error_code", None) or type(exc).__name__
        return self.lost

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            if self.renew_now():  # any failure means we may no longer hold the lock: say so, stop
                log.warning("state lock lease could not be renewed (%s); writes will be refused", self.lost)
                return
