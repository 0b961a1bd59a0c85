"""CycleCloud's Single-page application redirect URIs: deploy reads the app registration's own through Microsoft Graph
(`GET /applications(appId='{appId}')`, learn.microsoft.com/graph/api/application-get, the same least-privileged
permission as the service principal read deploy already makes) and the next steps list only those it lacks.

Against the Graph front of the stand-in (tests/support/arm_standin/graph.py), with the real azure-core pipeline."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO, RunCli
from tests.deploy.test_next_steps import _redirect_step, _with_bastion
from tests.support.arm_standin import ArmStandIn

APP = "8d2f4a61-3b7e-4c19-a5d0-6e1f9b3c2a84"  # configs/ai-training.yaml identity.cyclecloud_entra.client_id
HOME, SSO = "https://localhost:8443/home", "https://localhost:8443/sso"


def test_deploy_lists_only_the_redirect_uris_the_app_lacks(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.graph.add_app(APP).spa_redirect_uris = [HOME, "https://cyclecloud.contoso.com/home"]
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr + result.stdout
    steps = [line.strip() for line in result.stdout.split("Next steps", 1)[1].splitlines()]
    (line,) = [s for s in steps if s.startswith("CycleCloud sign-in")]
    # The Bastion forward's /sso, and the pair of the server's private host the hub's users open (network.hub_peering).
    lacking = line.split("redirect URIs: ", 1)[1].split(" (docs/", 1)[0].split()
    host = lacking[1].removeprefix("https://").removesuffix("/home")
    assert lacking == [SSO, f"https://{host}/home", f"https://{host}/sso"] and "localhost" not in host
    assert ("GET", f"/v1.0/applications(appId='{APP}')", 200) in arm.graph.log
    assert not [w for w in arm.graph.writes() if "/applications" in w[1]]  # read only: hpclz never edits the app


def test_nothing_to_register_says_nothing_and_unread_lists_all() -> None:
    from hpclz.deploy.next_steps import next_steps

    loaded, doc = _with_bastion(str(REPO / "configs" / "ai-training.yaml"))
    every = [HOME, SSO, "https://10.60.1.4/home", "https://10.60.1.4/sso"]  # Bastion's forward, the hub's users'
    assert not any(s.startswith("CycleCloud sign-in") for s in next_steps(loaded, doc, None, set(every)))
    assert _redirect_step(next_steps(loaded, doc, None, None)) == every
