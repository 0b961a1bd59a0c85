"""`hpclz state show|unlock` through the real CLI entry point."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from hpclz.azure.backends import open_backend
from hpclz.config.root import LandingZoneConfig
from hpclz.errors import ExitCode
from tests.conftest import CliResult
from tests.state.conftest import sample_state
from tests.support.azurite import Azurite

RunCli = Callable[..., CliResult]


def test_show_before_anything_was_deployed(run_cli: RunCli, config_file: Path) -> None:
    result = run_cli("state", "show", str(config_file))
    assert result.exit_code == ExitCode.OK
    assert "no state recorded yet" in result.stdout and "not locked" in result.stdout


def test_show_prints_serial_deployments_resources_outputs_and_holder(
    run_cli: RunCli, config: LandingZoneConfig, config_file: Path
) -> None:
    backend = open_backend(config, base_dir=config_file.parent)
    with backend.lock("deploy") as info:
        doc = backend.write(sample_state(config))
        text = run_cli("state", "show", str(config_file))
        as_json = run_cli("state", "show", str(config_file), "-o", "json")
    assert text.exit_code == ExitCode.OK
    assert f"serial 1, lineage {doc.lineage}" in text.stdout
    assert "energy-network  succeeded  network" in text.stdout
    assert "vnet-energy-prod" in text.stdout and "vnetId = /subscriptions/" in text.stdout
    assert f"pid {info.pid}" in text.stdout and "'deploy'" in text.stdout
    result = json.loads(as_json.stdout)["result"]
    assert (result["serial"], result["lineage"], result["backend"]) == (1, doc.lineage, "local")
    assert result["deployments"] == [
        {
            "name": "energy-network",
            "component": "network",
            "status": "succeeded",
            "template_hash": "ab" * 32,
            "finished_at": None,
        }
    ]
    assert result["resources"][0]["type"] == "Microsoft.Network/virtualNetworks"
    assert result["lock"]["id"] == info.id and result["lock"]["operation"] == "deploy"


def test_unlock_refuses_without_force_and_says_who_holds_it(
    run_cli: RunCli, config: LandingZoneConfig, config_file: Path
) -> None:
    backend = open_backend(config, base_dir=config_file.parent)
    with backend.lock("deploy") as info:
        refused = run_cli("state", "unlock", str(config_file))
        assert refused.exit_code == ExitCode.USAGE
        assert refused.stderr.startswith("error: ") and refused.stderr.count("\n") == 1
        assert f"pid {info.pid}" in refused.stderr and "--force" in refused.stderr
        assert backend.lock_info() is not None
        forced = run_cli("state", "unlock", str(config_file), "--force")
        assert forced.exit_code == ExitCode.OK
        assert "released the lock" in forced.stdout and info.who in forced.stdout and "'deploy'" in forced.stdout
        assert info.created.strftime("%Y-%m-%d %H:%M:%S") in forced.stdout
        assert backend.lock_info() is None
    again = run_cli("state", "unlock", str(config_file), "--force", "-o", "json")
    assert json.loads(again.stdout)["result"] == {"location": backend.location, "released": False, "holder": None}


def test_show_reads_blob_state_through_the_connection_string(
    run_cli: RunCli, blob_env: Azurite, config: LandingZoneConfig, config_file: Path
) -> None:
    blob_state = (
        "state:\n  backend: azure_blob\n  account_url: https://sthpclzcli.blob.core.windows.net\n  container: cli-show"
    )
    text, edits = re.subn(r"^state:\n  backend: local.*$", blob_state, config_file.read_text(), flags=re.M)
    assert edits == 1  # the preset's layout is what this test edits: fail loudly if it moves
    config_file.write_text(text)
    result = run_cli("state", "show", str(config_file), "-o", "json")
    assert result.exit_code == ExitCode.OK, result.stdout + result.stderr
    payload = json.loads(result.stdout)["result"]
    assert payload["backend"] == "azure_blob" and payload["exists"] is False
    assert payload["location"].startswith(f"http://127.0.0.1:{blob_env.port}/devstoreaccount1/cli-show/")


def test_a_bad_config_is_one_located_line(run_cli: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("metadata: {name: x}\n")
    result = run_cli("state", "show", str(bad))
    assert result.exit_code == ExitCode.CONFIG_INVALID
    assert all(line.startswith(f"error: {bad}:") for line in result.stderr.splitlines())
