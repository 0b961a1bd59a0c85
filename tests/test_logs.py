"""`-v` logs hpclz's own steps, `-vv` adds the Azure SDK's HTTP logging and tracebacks, the default neither; every
line passes through redaction (hpclz.logs)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from hpclz.logs import REDACTED, redact, register_secret, set_level
from tests.conftest import REPO, CliResult
from tests.support.arm_standin import ArmStandIn
from tests.support.local_http import serve

Run = Callable[..., CliResult]
SECRET = "Zq7-header-secret-91c"  # never printed


@pytest.fixture(autouse=True)
def quiet_afterwards() -> Iterator[None]:
    yield
    set_level(0)  # the tests that follow expect the default


def test_redaction_of_tokens_keys_signatures_and_registered_secrets() -> None:
    register_secret("s3cr3t-registered-42")
    lines = {
        "Authorization: Bearer eyJ0eXAi.abc-def": "eyJ0eXAi",
        "{'Authorization': 'Bearer eyJ0eXAi.abc'}": "eyJ0eXAi",
        '{"adminPassword": "hunter2-pw", "name": "vm"}': "hunter2-pw",
        "GET https://x.blob.core.windows.net/c?sv=2020&sig=abc%2Fdef&se=1": "abc%2Fdef",
        "x-ms-account-key=ZmFrZWtleQ==": "ZmFrZWtleQ",
        "it was s3cr3t-registered-42 all along": "s3cr3t-registered-42",
    }
    for line, secret in lines.items():
        assert secret not in redact(line) and REDACTED in redact(line), line
    for plain in ("reading config lz.yaml", "disablePasswordAuthentication: true", "GET /subscriptions/s -> 200"):
        assert redact(plain) == plain


@pytest.fixture
def energy(tmp_path: Path) -> Path:
    path = tmp_path / "energy.yaml"
    shutil.copy(REPO / "configs" / "energy.yaml", path)
    return path


def test_default_logs_nothing_and_v_logs_hpclz_steps(run_cli: Run, energy: Path) -> None:
    quiet = run_cli("plan", str(energy), "--offline")
    assert quiet.exit_code == 0 and " hpclz." not in quiet.stderr
    loud = run_cli("-v", "plan", str(energy), "--offline")
    assert loud.exit_code == 0, loud.stderr
    assert f"INFO hpclz.config.loader: reading config {energy}" in loud.stderr
    assert "INFO hpclz.render.build: rendered " in loud.stderr
    assert "INFO hpclz.state.local: read state " in loud.stderr and "none yet" in loud.stderr
    assert "INFO hpclz.cost.retail: prices for southcentralus" in loud.stderr
    assert "azure." not in loud.stderr and loud.stdout == quiet.stdout


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        yield standin


def test_v_and_vv_against_the_standin(arm: ArmStandIn, tmp_path: Path, run_cli: Run) -> None:
    zone = tmp_path / "zone" / "lz.yaml"
    zone.parent.mkdir()
    shutil.copy(REPO / "configs" / "ai-training.yaml", zone)
    password = os.environ["SLURMDB_PASSWORD"]  # sent to ARM in the what-if request body (a secureString)
    one = run_cli("-v", "plan", str(zone), "--what-if")
    assert one.exit_code == 0, one.stderr
    assert "INFO hpclz.azure.clients: POST /subscriptions/" in one.stderr and "whatIf -> " in one.stderr
    assert "azure.core" not in one.stderr and "Traceback" not in one.stderr
    two = run_cli("-vv", "plan", str(zone), "--what-if")
    assert two.exit_code == 0, two.stderr
    assert "INFO azure.core.pipeline.policies.http_logging_policy: Request URL: " in two.stderr
    assert "INFO hpclz.azure.clients: POST /subscriptions/" in two.stderr
    for secret in (arm.token, password):
        assert secret not in one.stderr + two.stderr


def test_vv_shows_tracebacks_and_v_only_the_line(run_cli: Run, capsys: pytest.CaptureFixture[str]) -> None:
    from azure.core.exceptions import HttpResponseError

    from hpclz.azure.errors import azure_errors
    from hpclz.errors import HpclzError

    for flag, traceback in (("-v", False), ("-vv", True)):
        run_cli(flag, "explain", "HPCLZ-CMP-010")
        capsys.readouterr()
        with pytest.raises(HpclzError), azure_errors("reading a thing"):
            raise HttpResponseError(message=f"failed with password={SECRET}")
        err = capsys.readouterr().err
        assert "INFO hpclz.azure.errors: reading a thing failed" in err
        assert ("Traceback (most recent call last)" in err) is traceback
        assert SECRET not in err


class _Echo(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.dumps({"connectionString": f"AccountKey={SECRET}"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


def test_secrets_in_a_header_and_a_body_never_reach_the_log(capsys: pytest.CaptureFixture[str]) -> None:
    """Through a real azure-core pipeline with body tracing on (which hpclz itself never turns on): the header,
    request body and response body each carry a secret; -vv prints the request and neither secret."""
    from azure.core import PipelineClient
    from azure.core.pipeline.policies import HttpLoggingPolicy, NetworkTraceLoggingPolicy
    from azure.core.rest import HttpRequest, HttpResponse

    set_level(2)
    with serve(_Echo) as url:
        policies = [NetworkTraceLoggingPolicy(logging_enable=True), HttpLoggingPolicy()]
        client: PipelineClient[HttpRequest, HttpResponse] = PipelineClient(base_url=url, policies=policies)
        with client:
            request = HttpRequest(
                "POST",
                f"{url}/vault?sig={SECRET}",
                headers={"x-ms-account-key": SECRET, "Authorization": f"Bearer {SECRET}"},
                json={"adminPassword": SECRET},
            )
            assert client.send_request(request).status_code == 200
    err = capsys.readouterr().err
    assert "Request URL:" in err and "Response status: 200" in err  # the SDK's lines are there
    assert "adminPassword" in err and "connectionString" in err  # and so are the bodies, redacted
    assert SECRET not in err
