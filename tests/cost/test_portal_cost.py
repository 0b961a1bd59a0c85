"""The portal VM is a baseline line of the estimate, on the same VM meter as the service VMs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpclz.config import load_config
from hpclz.cost.estimate import estimate
from tests.conftest import REPO


@pytest.fixture(autouse=True)
def no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCLZ_PRICES_DIR", str(tmp_path / "no-cache"))


def test_the_portal_vm_is_estimated_only_where_it_is_on() -> None:
    on = estimate(load_config(REPO / "configs" / "ai-training.yaml").config)
    (line,) = [li for li in on.lines if li.name.startswith("Open OnDemand portal")]
    assert (line.group, line.meter, line.count) == ("baseline", "vm:Standard_D4as_v5", 1)
    off = estimate(load_config(REPO / "configs" / "finance.yaml").config)
    assert not [li for li in off.lines if "portal" in li.name]
