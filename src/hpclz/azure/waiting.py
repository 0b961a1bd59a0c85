"""Bounded waiting: every wait hpclz does on Azure has an upper bound, says so while it waits, and ends at
once when the run is stopped (Ctrl-C).

- Retry-After: ARM asks throttled clients to wait before retrying (429 with Retry-After, see
  https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling);
  azure-core sleeps whatever the header says, so one `Retry-After: 3600` froze a deploy for an hour.
  The wait is capped (HPCLZ_RETRY_AFTER_CAP, 120 s by default) and counted down.
- Long-running deployments: see hpclz.deploy.timeouts.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from azure.core.pipeline.policies import RetryPolicy

from hpclz.azure.errors import WaitCancelled

RETRY_AFTER_CAP = 120.0
COUNTDOWN_EVERY = 10.0  # seconds between countdown messages, so a log is not flooded


class BoundedRetryPolicy(RetryPolicy[Any, Any]):
    """azure-core's retry policy with a capped, visible and cancellable wait between attempts."""

    def __init__(
        self,
        *,
        cancel: threading.Event,
        on_wait: Callable[[str], None],
        cap: float = RETRY_AFTER_CAP,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self._cancel = cancel
        self._on_wait = on_wait
        self._cap = cap

    def _sleep_for_retry(self, response: Any, _transport: Any) -> bool:
        asked = self.get_retry_after(response)
        if not asked:
            return False
        status = getattr(response.http_response, "status_code", "?")
        capped = min(float(asked), self._cap)
        note = f" (Retry-After {asked:g} s capped at {self._cap:g} s)" if capped < float(asked) else ""
        self._wait(capped, f"ARM answered {status}{note}")
        return True

    def _sleep_backoff(self, settings: Any, _transport: Any) -> None:
        backoff = self.get_backoff_time(settings)
        if backoff > 0:
            self._wait(backoff, "retrying a failed request")

    def _wait(self, seconds: float, why: str) -> None:
        deadline = time.monotonic() + seconds
        next_note = 0.0 if seconds >= 1 else deadline  # a sub-second backoff is not worth a line
        while (left := deadline - time.monotonic()) > 0:
            if time.monotonic() >= next_note:
                self._on_wait(f"{why}: retrying in {math.ceil(left)} s")
                next_note = time.monotonic() + COUNTDOWN_EVERY
            if self._cancel.wait(min(left, 1.0)):
                raise WaitCancelled(why)
