"""hpclz-portal-proxy: the portal's interactive-app proxy settings follow the VM's userData (read from a local stand-in
of the instance metadata service), and every other line of ood_portal.yml, secrets included, stays as it was."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from ruamel.yaml import YAML

from tests.render.conftest import preset_plan
from tests.render.test_portal import _heredoc, _of, _portal, _script
from tests.support.local_http import serve

HELPER = Path(__file__).resolve().parents[2] / "templates" / "cloud-init" / "portal_proxy.py"


class Imds(BaseHTTPRequestHandler):
    user_data: ClassVar[str] = ""

    def do_GET(self) -> None:
        # The path and header IMDS answers userData on (learn.microsoft.com/azure/virtual-machines/user-data).
        ok = self.headers["Metadata"] == "true" and self.path == (
            "/metadata/instance/compute/userData?api-version=2021-01-01&format=text"
        )
        self.send_response(200 if ok else 404)
        self.end_headers()
        self.wfile.write(self.user_data.encode() if ok else b"")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def imds() -> Iterator[str]:
    with serve(Imds) as url:
        yield url


def _run(imds: str, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HPCLZ_IMDS_URL": imds}
    return subprocess.run([sys.executable, str(HELPER), str(config)], capture_output=True, text=True, env=env)


def _ood_portal(tmp_path: Path) -> tuple[Path, str]:
    """ood_portal.yml as the ai-training portal's boot script writes it, with the lines it appends after."""
    script = _script(_portal(preset_plan("ai-training")))
    text = _heredoc(script, "/etc/ood/config/ood_portal.yml") + '\noidc_crypto_passphrase: "secret-passphrase"\n'
    path = tmp_path / "ood_portal.yml"
    path.write_text(text)
    path.chmod(0o600)
    return path, text


def test_the_settings_come_from_user_data_and_nothing_else_changes(imds: str, tmp_path: Path) -> None:
    path, before = _ood_portal(tmp_path)
    (vm,) = _of(_portal(preset_plan("ai-training")), "Microsoft.Compute/virtualMachines")
    Imds.user_data = vm["properties"]["userData"]  # what ARM gives the portal VM
    wanted = json.loads(base64.b64decode(Imds.user_data))
    first = _run(imds, path)
    assert first.returncode == 2, first.stderr
    after = YAML(typ="safe").load(path.read_text())
    assert {k: after[k] for k in ("host_regex", "node_uri", "rnode_uri")} == {
        k: wanted[k] for k in ("host_regex", "node_uri", "rnode_uri")
    }
    assert after["oidc_crypto_passphrase"] == "secret-passphrase"
    assert YAML(typ="safe").load(before).items() <= after.items()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Unchanged userData: nothing to do, nothing written.
    written = path.read_text()
    assert _run(imds, path).returncode == 0 and path.read_text() == written


def test_a_new_partition_in_user_data_replaces_the_old_regex(imds: str, tmp_path: Path) -> None:
    path, _ = _ood_portal(tmp_path)
    for regex in ("(?:h100)-[1-9][0-9]{0,1}", "(?:h100|h200)-[1-9][0-9]{0,1}"):
        document = {"kind": "hpclz-portal-proxy", "host_regex": regex, "node_uri": "/node", "rnode_uri": "/rnode"}
        Imds.user_data = base64.b64encode(json.dumps(document).encode()).decode()
        assert _run(imds, path).returncode == 2
    text = path.read_text()
    assert text.count("host_regex:") == 1 and YAML(typ="safe").load(text)["host_regex"] == regex


@pytest.mark.parametrize(
    "user_data",
    [
        base64.b64encode(b'{"kind": "hpclz-cyclecloud-cluster"}').decode(),
        base64.b64encode(
            b'{"kind": "hpclz-portal-proxy", "host_regex": "(", "node_uri": "/node", "rnode_uri": "/r"}'
        ).decode(),
        "not base64 at all!",
    ],
)
def test_user_data_that_is_not_the_portals_changes_nothing(imds: str, tmp_path: Path, user_data: str) -> None:
    path, before = _ood_portal(tmp_path)
    Imds.user_data = user_data
    result = _run(imds, path)
    assert result.returncode == 1 and "hpclz-portal-proxy:" in result.stderr
    assert path.read_text() == before
