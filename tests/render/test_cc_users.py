"""hpclz-cc-users, as rendered into the CycleCloud server's customData, run against a local instance-metadata stand-in,
a local Blob endpoint and a `cycle_server` double standing for CycleCloud's database at the boundary (its `execute
--format json` answer: a JSON list of records, as hpclz-cluster-sync reads it in test_cluster_sync)."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hpclz.render.cloudinit import USER_RECORDS_BLOB
from tests.render.test_cloudinit import TEMPLATES, _artifacts, _cloud_config
from tests.support.local_http import FakeService, serve

SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"
SPEC = {
    "account": "lockeracct",
    "container": "hpclz",
    "blob": USER_RECORDS_BLOB,
    "identity": "resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cc",
}
BLOB_PATH = f"/lockeracct/hpclz/{USER_RECORDS_BLOB}"
# Records as CycleCloud holds them: the fields CCWS writes for a user (install.sh's cc-vm-mi record) and, beside
# them, what must never leave the server (a password hash, a key) or be carried (roles, Superuser).
ALICE = {
    "Name": "alice@contoso.com",
    "UID": 20001,
    "NodeUserName": "alice",
    "Authentication": "entra",
    "EntraTID": "t-1",
    "EntraOID": "o-alice",
    "HashedPassword": "sha256:deadbeef",
    "Roles": ["Administrator"],
    "Superuser": True,
}
BOB = {"Name": "bob@contoso.com", "UID": 20000, "NodeUserName": "bob", "Password": "hash"}
# A UID as a string or a float in the JSON answer is still that number; a user with no UID yet has none to keep.
CAROL = {"Name": "carol@contoso.com", "UID": "20003"}
DAVE = {"Name": "dave@contoso.com", "UID": 20004.0}
ERIN = {"Name": "erin@contoso.com", "UID": None}
SERVICE = {"Name": "cc-vm-mi", "UID": 19000, "ServiceAccount": True, "EntraOID": "o-vm"}
ADMIN = {"Name": "hpcadmin", "UID": 20002}


class FakeImds(FakeService):
    user_data: ClassVar[dict[str, str]] = {}

    def do_GET(self) -> None:
        assert self.headers["Metadata"] == "true"
        if self.path.startswith("/metadata/instance/compute/userData?"):
            raw = json.dumps({"cluster": "c", **self.user_data}).encode()
            body = base64.b64encode(gzip.compress(raw, mtime=0)).decode()
        elif "/compute/subscriptionId" in self.path:
            body = SUBSCRIPTION
        elif self.path.startswith("/metadata/identity/oauth2/token?"):
            assert "resource=https%3A%2F%2Fstorage.azure.com%2F" in self.path
            body = json.dumps({"access_token": "storage-token"})
        else:
            body = None
        self.answer(body)


class FakeBlob(BaseHTTPRequestHandler):
    """Get Blob and Put Blob (learn.microsoft.com/rest/api/storageservices/get-blob: 404 BlobNotFound for a blob that
    does not exist; .../put-blob: 201 Created); `status` overrides every answer when set."""

    blobs: ClassVar[dict[str, bytes]] = {}
    puts: ClassVar[int] = 0
    gets: ClassVar[int] = 0
    status: ClassVar[int] = 0

    def _answer(self, status: int, body: bytes = b"") -> None:
        self.send_response(self.status or status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        assert self.headers["Authorization"] == "Bearer storage-token"
        FakeBlob.gets += 1
        if self.path in self.blobs:
            self._answer(200, self.blobs[self.path])
        else:
            self._answer(404, b"<Error><Code>BlobNotFound</Code></Error>")

    def do_PUT(self) -> None:
        assert self.headers["Authorization"] == "Bearer storage-token"
        assert self.headers["x-ms-blob-type"] == "BlockBlob"
        FakeBlob.puts += 1
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if not self.status:
            FakeBlob.blobs[self.path] = body
        self._answer(201)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def box(tmp_path: Path) -> Iterator[dict[str, Any]]:
    # The program as the hpclz wheel carries it, where hpclz-server-programs installs it from (test_server_programs.py).
    text = (TEMPLATES / "cc_users.py").read_text(encoding="utf-8")
    script = tmp_path / "hpclz-cc-users"
    script.write_text(text, encoding="utf-8")
    FakeImds.user_data = {"user_records": json.dumps(SPEC)}
    FakeBlob.blobs, FakeBlob.puts, FakeBlob.gets, FakeBlob.status = {}, 0, 0, 0
    (tmp_path / "records.json").write_text(
        json.dumps([ALICE, BOB, SERVICE, ADMIN, CAROL, DAVE, ERIN]), encoding="utf-8"
    )
    double = tmp_path / "cycle_server"
    double.write_text(
        f'#!/bin/bash\nprintf "%s\\n" "$*" >> {tmp_path}/calls\ncat {tmp_path}/records.json\n', encoding="utf-8"
    )
    double.chmod(0o755)
    with serve(FakeImds) as imds, serve(FakeBlob) as blob:
        env = {
            **os.environ,
            "HPCLZ_IMDS_URL": imds,
            "HPCLZ_BLOB_URL": blob + "/{account}",
            "HPCLZ_CYCLE_SERVER": str(double),
            "HPCLZ_POLL_SECONDS": "0",
        }
        yield {"dir": tmp_path, "script": script, "env": env}


def _run(box: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    command = ["python3", str(box["script"]), *args]
    return subprocess.run(command, env=box["env"], capture_output=True, text=True, timeout=60, check=False)


def _export(box: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return _run(box, "export", "--state", str(box["dir"] / "state"))


def _restore(box: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return _run(box, "restore", "--admin", "hpcadmin", "--out", str(box["dir"] / "hpclz-users.json"))


def test_export_keeps_names_and_uids_and_never_a_secret(box: dict[str, Any]) -> None:
    done = _export(box)
    assert done.returncode == 0, done.stderr
    exported = json.loads(FakeBlob.blobs[BLOB_PATH])
    assert exported == [  # sorted by name
        {k: ALICE[k] for k in ("Name", "UID", "NodeUserName", "Authentication", "EntraTID", "EntraOID")},
        {k: v for k, v in BOB.items() if k != "Password"},
        {"Name": "carol@contoso.com", "UID": 20003},
        {"Name": "dave@contoso.com", "UID": 20004},
        ADMIN,
    ]
    body = FakeBlob.blobs[BLOB_PATH].decode()
    for never in ("deadbeef", "hash", "Roles", "Superuser", "cc-vm-mi"):
        assert never not in body
    # It asks CycleCloud for those fields only.
    (call,) = (box["dir"] / "calls").read_text(encoding="utf-8").splitlines()
    assert call == (
        "execute --format json SELECT Name, UID, NodeUserName, Authentication, EntraTID, EntraOID, ServiceAccount "
        "FROM AuthenticatedUser"
    )


def test_an_unchanged_export_is_not_written_again_and_a_change_is(box: dict[str, Any]) -> None:
    assert _export(box).returncode == 0 and _export(box).returncode == 0
    assert FakeBlob.puts == 1
    (box["dir"] / "records.json").write_text(json.dumps([ALICE, BOB, ADMIN, {"Name": "frank", "UID": 20005}]))
    assert _export(box).returncode == 0
    assert FakeBlob.puts == 2 and "frank" in FakeBlob.blobs[BLOB_PATH].decode()


def test_a_refused_write_fails_the_export_and_records_nothing(box: dict[str, Any]) -> None:
    FakeBlob.status = 403
    done = _export(box)
    assert done.returncode == 1 and done.stderr.startswith("hpclz-cc-users export: failed: HTTP Error 403")
    FakeBlob.status = 0
    assert _export(box).returncode == 0 and BLOB_PATH in FakeBlob.blobs  # the next run writes it


def test_no_user_records_in_user_data_exports_and_restores_nothing(box: dict[str, Any]) -> None:
    FakeImds.user_data = {}
    assert _export(box).returncode == 0 and _restore(box).returncode == 0
    assert (FakeBlob.puts, FakeBlob.gets) == (0, 0)
    assert not (box["dir"] / "hpclz-users.json").exists()


def test_restore_writes_the_old_records_and_hands_the_admin_its_uid(box: dict[str, Any]) -> None:
    assert _export(box).returncode == 0
    done = _restore(box)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "20002\n"  # the bootstrap puts it in its own admin record
    records = json.loads((box["dir"] / "hpclz-users.json").read_text(encoding="utf-8"))
    assert {r["Name"]: r["UID"] for r in records} == {
        "alice@contoso.com": 20001,
        "bob@contoso.com": 20000,
        "carol@contoso.com": 20003,
        "dave@contoso.com": 20004,
    }
    assert {r["AdType"] for r in records} == {"AuthenticatedUser"}
    assert records[0]["EntraOID"] == "o-alice"


def test_no_export_yet_restores_nothing(box: dict[str, Any]) -> None:
    done = _restore(box)
    assert (done.returncode, done.stdout, FakeBlob.gets) == (0, "", 1)
    assert not (box["dir"] / "hpclz-users.json").exists()


@pytest.mark.parametrize(
    ("records", "line"),
    [
        (
            [ALICE | {"UID": 20000}, BOB],
            "hpclz-cc-users restore: refused, nothing written: UID 20000 belongs to alice@contoso.com and "
            "bob@contoso.com",
        ),
        (
            [{"Name": "eve", "UID": 19000}],
            "hpclz-cc-users restore: refused, nothing written: UID 19000 of eve is the server's service account's "
            "(cc-vm-mi)",
        ),
        (
            [{"Name": "eve"}],
            "hpclz-cc-users restore: refused, nothing written: a record without a Name and a numeric "
            'UID: {"Name": "eve"}',
        ),
    ],
)
def test_a_record_whose_uid_clashes_is_refused_loudly(box: dict[str, Any], records: list[Any], line: str) -> None:
    FakeBlob.blobs[BLOB_PATH] = json.dumps(records).encode()
    done = _restore(box)
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (1, "", [line])
    assert not (box["dir"] / "hpclz-users.json").exists()


def test_a_locker_that_never_answers_stops_the_restore(box: dict[str, Any]) -> None:
    FakeBlob.status = 503
    done = _restore(box)
    assert done.returncode == 1 and "failed: HTTP Error 503" in done.stderr
    assert FakeBlob.gets == 60  # bounded: 60 tries 10 s apart, RBAC's 10 minutes
    assert not (box["dir"] / "hpclz-users.json").exists()


def test_the_first_boot_imports_the_users_before_cyclecloud_initializes() -> None:
    bootstrap = _artifacts("finance")["cloud-init/cyclecloud-server.yaml"]
    (text,) = [
        f["content"] for f in _cloud_config("finance")["write_files"] if f["path"].endswith("bootstrap-cyclecloud")
    ]
    assert bootstrap
    lines = text.splitlines()

    def at(fragment: str) -> int:
        (index,) = [n for n, line in enumerate(lines) if fragment in line]
        return index

    restore = at("hpclz-cc-users restore --admin")
    moved = at("mv /opt/hpclz/hpclz-users.json /opt/cycle_server/config/data/hpclz-users.json")
    imported = at("hpclz-cc-await imported /opt/cycle_server/config/data/hpclz-users.json")
    initialize = min(n for n, line in enumerate(lines) if line.startswith("cyclecloud initialize"))
    assert restore < moved < at("/opt/cycle_server/cycle_server start") < imported < initialize
    # hpclz-cc-users itself comes from the hpclz wheel in the locker, installed first (hpclz-server-programs).
    assert at("/opt/hpclz/bin/hpclz-server-programs --first-boot") < restore
    assert restore < at('"Name": "$ADMIN", "RawPassword": "$password", "Superuser": true$admin_uid_field}')


def test_the_sync_timer_exports_the_users_first_and_never_fails_on_it() -> None:
    (unit,) = [
        f["content"]
        for f in _cloud_config("finance")["write_files"]
        if f["path"] == "/etc/systemd/system/hpclz-cluster-sync.service"
    ]
    assert "ExecStartPre=-/usr/bin/python3 /opt/hpclz/bin/hpclz-cc-users export\n" in unit


def test_user_data_names_the_users_blob_in_the_locker() -> None:
    document = json.loads(_artifacts("finance")["cloud-init/cyclecloud-userdata.json"])
    spec = json.loads(document["user_records"])
    assert spec["container"] == "hpclz" and spec["blob"] == USER_RECORDS_BLOB
    assert spec["identity"].endswith(json.loads(document["wheel_locker"])["identity"].rsplit("/", 1)[-1])
