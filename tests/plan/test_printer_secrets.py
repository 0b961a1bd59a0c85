"""What the printer shows of noise, and that no secret reaches a plan (text, JSON or saved file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from hpclz.cli.views.changeset import print_changeset
from hpclz.plan.config_diff import config_changes, config_snapshot
from hpclz.plan.offline import offline_changeset
from hpclz.plan.saved import save_plan
from hpclz.plan.whatif import whatif_changeset
from hpclz.render.build import build_plan
from tests.plan.support import applied_state, edited, preset

SECRET = "licence-key-7f3a9c"  # a value that must never be printed


def _noisy() -> Any:
    rid = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/natGateways/ng"
    body = {
        "status": "Succeeded",
        "properties": {
            "changes": [
                {
                    "resourceId": rid,
                    "changeType": "Modify",
                    "before": {},
                    "after": {},
                    "delta": [
                        {"path": "properties.provisioningState", "propertyChangeType": "Delete", "before": "Succeeded"},
                        {
                            "path": "properties.idleTimeoutInMinutes",
                            "propertyChangeType": "Modify",
                            "before": 4,
                            "after": 10,
                        },
                    ],
                }
            ]
        },
    }
    return whatif_changeset({"d": body}, landing_zone="t", environment="dev")


def _text(changes: Any, show_noise: bool) -> str:
    console = Console(width=240, no_color=True, record=True)
    print_changeset(console, changes, show_noise=show_noise)
    return console.export_text()


def test_noise_is_counted_and_shown_on_request() -> None:
    quiet = _text(_noisy(), show_noise=False)
    assert "properties.idleTimeoutInMinutes: 4 -> 10" in quiet
    assert "provisioningState" not in quiet
    assert "1 what-if changes filtered as noise (--show-noise shows them)." in quiet
    loud = _text(_noisy(), show_noise=True)
    assert "properties.provisioningState" in loud and "# noise: provisioningState is read-only" in loud


def _with_secret(value: str) -> Any:
    def add(data: dict[str, Any]) -> None:
        data["identity"]["key_vault"].setdefault("secrets", {})["licence-key"] = value

    return edited(preset("energy"), add)


def test_secrets_never_reach_a_plan(tmp_path: Path) -> None:
    config = _with_secret(SECRET)
    snapshot = config_snapshot(config)
    assert SECRET not in str(snapshot)
    state = applied_state(preset("energy"))
    changes = offline_changeset(build_plan(config), state)
    changes.config_changes = config_changes(state.applied_config, config)
    assert [(c.path, c.after) for c in changes.config_changes] == [
        ("identity.key_vault.secrets.licence-key", "**********")
    ]
    saved = tmp_path / "plan.json"
    save_plan(saved, build_plan(config), changes, config, state)
    assert SECRET not in saved.read_text()
    assert SECRET not in _text(changes, show_noise=True)
    assert SECRET not in str(changes.payload())
