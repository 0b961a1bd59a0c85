"""Faults the stand-in injects on request: throttling, server errors, dropped connections, failing resources."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Fault:
    """A fault matched against a request (method + path regex) or a resource being provisioned.

    kind: "throttle" (429 + Retry-After), "error" (`status`, 500 unless set), "drop" (close the connection unanswered),
    "resource" (the matching resource fails with `code`/`message`, nested like real ARM errors).
    `times` is how many matches it fires for (None: forever).
    """

    kind: str
    method: str = ".*"
    path: str = ".*"
    times: int | None = 1
    retry_after: int = 1
    status: int = 500
    code: str = "InternalServerError"
    message: str = "injected fault"
    fired: int = 0

    def matches_request(self, method: str, path: str) -> bool:
        return (
            self.kind in ("throttle", "error", "drop")
            and re.fullmatch(self.method, method, re.I) is not None
            and re.search(self.path, path, re.I) is not None
        )

    def matches_resource(self, resource_type: str, name: str) -> bool:
        return self.kind == "resource" and (
            re.fullmatch(self.path, resource_type, re.I) is not None or re.fullmatch(self.path, name, re.I) is not None
        )

    @property
    def spent(self) -> bool:
        return self.times is not None and self.fired >= self.times


@dataclass
class Faults:
    _items: list[Fault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, fault: Fault | None = None, **kwargs: Any) -> Fault:
        fault = fault or Fault(**kwargs)
        with self._lock:
            self._items.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def for_request(self, method: str, path: str) -> Fault | None:
        return self._take(lambda f: f.matches_request(method, path))

    def for_resource(self, resource_type: str, name: str) -> Fault | None:
        return self._take(lambda f: f.matches_resource(resource_type, name))

    def _take(self, predicate: Any) -> Fault | None:
        with self._lock:
            for fault in self._items:
                if not fault.spent and predicate(fault):
                    fault.fired += 1
                    return fault
        return None
