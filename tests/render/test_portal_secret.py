"""hpclz-portal-secret against local instance-metadata and Key Vault stand-ins: it waits out the minutes before
the portal VM's new role reaches Key Vault, and never prints the secret anywhere but stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.support.local_http import serve

HELPER = Path(__file__).resolve().parents[2] / "templates" / "cloud-init" / "portal_secret.py"
# Key Vault's answer while the caller's role is not yet effective: HTTP 403, code Forbidden, inner ForbiddenByRbac,
# as reported in learn.microsoft.com/answers/questions/5904214/rbac-error-on-key-vault-secrets ("Inner error:
# { "code": "ForbiddenByRbac" }", "may temporarily fail with ForbiddenByRbac until propagation completes") and
# learn.microsoft.com/azure/key-vault/general/rest-error-codes (403 Forbidden).
FORBIDDEN = {
    "error": {
        "code": "Forbidden",
        "message": "Caller is not authorized to perform action on resource.\r\nIf role assignments, deny assignments "
        "or role definitions were changed recently, please observe propagation time.",
        "innererror": {"code": "ForbiddenByRbac"},
    }
}
# An unknown API version: Key Vault's 400 BadParameter, which waiting cannot fix.
BAD_PARAMETER = {"error": {"code": "BadParameter", "message": "The specified version (1.0) is not recognized."}}


class Imds(BaseHTTPRequestHandler):
    queries: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        assert self.headers["Metadata"] == "true"
        Imds.queries.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(json.dumps({"access_token": "portal-token", "token_type": "Bearer"}).encode())

    def log_message(self, *args: Any) -> None:
        pass


class Vault(BaseHTTPRequestHandler):
    """Answers `answers` in order, then the secret (Get Secret's shape:
    learn.microsoft.com/rest/api/keyvault/secrets/get-secret/get-secret)."""

    answers: ClassVar[list[tuple[int, dict[str, Any]]]] = []
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        assert self.headers["Authorization"] == "Bearer portal-token"
        Vault.paths.append(self.path)
        status, body = Vault.answers.pop(0) if Vault.answers else (200, {"value": "s3cret~from.vault"})
        self.send_response(status)
        self.end_headers()
        self.wfile.write(json.dumps(body).encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stand_ins() -> Iterator[dict[str, str]]:
    Imds.queries, Vault.paths = [], []
    with serve(Imds) as imds, serve(Vault) as vault:
        yield {
            **os.environ,
            "HPCLZ_IMDS_URL": imds,
            "HPCLZ_VAULT_URL": vault + "/{vault}",
            "HPCLZ_SECRET_ATTEMPTS": "4",
            "HPCLZ_SECRET_PAUSE": "0.01",
        }


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, str(HELPER), "kv-aitrain-prod-eus2-a1", "ood-client-secret"]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_role_not_yet_effective_is_waited_out(stand_ins: dict[str, str]) -> None:
    Vault.answers = [(403, FORBIDDEN), (403, FORBIDDEN)]
    done = _run(stand_ins)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "s3cret~from.vault"
    assert "s3cret" not in done.stderr and done.stderr.count("HTTP 403, waiting") == 2
    assert Vault.paths == ["/kv-aitrain-prod-eus2-a1/secrets/ood-client-secret?api-version=7.4"] * 3
    # The system-assigned identity: no mi_res_id or client_id, audience Key Vault.
    assert all("resource=https%3A%2F%2Fvault.azure.net" in q and "mi_res_id" not in q for q in Imds.queries)


def test_it_gives_up_after_its_attempts(stand_ins: dict[str, str]) -> None:
    Vault.answers = [(403, FORBIDDEN)] * 4
    done = _run(stand_ins)
    assert done.returncode == 1 and done.stdout == ""
    assert "gave up" in done.stderr


def test_an_error_waiting_cannot_fix_stops_at_once(stand_ins: dict[str, str]) -> None:
    Vault.answers = [(400, BAD_PARAMETER)]
    done = _run(stand_ins)
    assert done.returncode != 0 and done.stdout == ""
    assert "HTTP Error 400" in done.stderr and len(Vault.paths) == 1
