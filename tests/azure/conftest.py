from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.arm_standin import ArmStandIn


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        yield standin
