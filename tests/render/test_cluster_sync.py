"""hpclz-cluster-sync against a local instance-metadata stand-in and a recording `cyclecloud` executable."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hpclz.render.cloudinit import user_data
from tests.render.conftest import preset_plan, variant
from tests.support.local_http import FakeService, serve

SYNC = Path(__file__).resolve().parents[2] / "templates" / "cloud-init" / "cluster_sync.py"
SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"


class FakeImds(FakeService):
    user_data: ClassVar[str] = ""
    token_queries: ClassVar[list[str]] = []
    # compute/tagsList as IMDS answers it: a JSON array of name/value objects
    # (learn.microsoft.com/azure/virtual-machines/instance-metadata-service, "tagsList").
    tags: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        assert self.headers["Metadata"] == "true"
        if self.path.startswith("/metadata/instance/compute/userData?api-version=2021-01-01&format=text"):
            body = self.user_data
        elif self.path.startswith("/metadata/instance/compute/tagsList?api-version=2021-02-01"):
            body = json.dumps(self.tags)
        elif "/compute/subscriptionId" in self.path:
            body = SUBSCRIPTION
        elif self.path.startswith("/metadata/identity/oauth2/token?"):
            FakeImds.token_queries.append(self.path)
            body = json.dumps({"access_token": "vault-token", "token_type": "Bearer"})
        else:
            body = None
        self.answer(body)


class FakeVault(BaseHTTPRequestHandler):
    """Key Vault's Get Secret: the answer's shape and the SecretNotFound error as the REST reference documents them
    (https://learn.microsoft.com/en-us/rest/api/keyvault/secrets/get-secret/get-secret)."""

    secrets: ClassVar[dict[str, str]] = {}
    gets: ClassVar[int] = 0

    def do_GET(self) -> None:
        assert self.headers["Authorization"] == "Bearer vault-token"
        FakeVault.gets += 1
        vault, _, name = self.path.split("?")[0].strip("/").split("/")
        value = self.secrets.get(f"{vault}/{name}")
        body: dict[str, Any]
        if value is None:
            status, body = (
                404,
                {
                    "error": {
                        "code": "SecretNotFound",
                        "message": f"A secret with (name/id) {name} was not found in this key vault.",
                    }
                },
            )
        else:
            status, body = (
                200,
                {
                    "value": value,
                    # Each Set Secret makes a new version (learn.microsoft.com/rest/api/keyvault/secrets/set-secret):
                    # here a version per value.
                    "id": f"https://{vault}.vault.azure.net/secrets/{name}/{hashlib.md5(value.encode()).hexdigest()}",
                    "attributes": {"enabled": True},
                },
            )
        self.send_response(status)
        self.end_headers()
        self.wfile.write(json.dumps(body).encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(autouse=True)
def arm(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every run reads the orchestrating identity's client ID for the account (hpclz.render.cloudinit)."""
    FakeArm.paths, FakeArm.placed = [], True
    with serve(FakeArm) as url:
        monkeypatch.setenv("HPCLZ_ARM_URL", url)
        yield url


class FakeBlob(BaseHTTPRequestHandler):
    """Put Blob and Get Blob on the locker (learn.microsoft.com/rest/api/storageservices/put-blob: 201 Created;
    .../get-blob: 404 BlobNotFound for a blob that does not exist), recording each Put; `status` answers a Put to a
    blob whose path ends with `refused` (403: the locker refuses it). A Put with If-None-Match: * onto a blob that exists is refused with 409 BlobAlreadyExists
    (.../specifying-conditional-headers-for-blob-service-operations)."""

    puts: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []
    blobs: ClassVar[dict[str, bytes]] = {}
    status: ClassVar[int] = 201
    refused: ClassVar[str] = "/current"

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        FakeBlob.puts.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        status = self.status if self.path.endswith(self.refused) else 201
        if self.headers.get("If-None-Match") == "*" and self.path in self.blobs:
            status = 409
        elif status == 201:
            FakeBlob.blobs[self.path] = body
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        assert self.headers["Authorization"] == "Bearer vault-token"
        body = self.blobs.get(self.path)
        self.send_response(404 if body is None else 200)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(autouse=True)
def blob(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    FakeBlob.puts, FakeBlob.blobs, FakeBlob.status = [], {}, 201
    with serve(FakeBlob) as url:
        monkeypatch.setenv("HPCLZ_BLOB_URL", url + "/{account}")
        yield url


@pytest.fixture(autouse=True)
def vault(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every run may read a secret: the finance preset keeps its accounting password in Key Vault."""
    FakeVault.secrets = {f"{spec['vault']}/{spec['name']}": "preset-password" for spec in _secret_specs()}
    FakeVault.gets = 0
    with serve(FakeVault) as url:
        monkeypatch.setenv("HPCLZ_VAULT_URL", url + "/{vault}")
        yield url


# The identity's Get, as the 2023-01-31 spec's example answers it (Azure/azure-rest-api-specs@2e1a8ca:
# specification/msi/resource-manager/Microsoft.ManagedIdentity/stable/2023-01-31/examples/IdentityGet.json).
CLIENT_ID = "4024ab25-56a8-4370-aea6-6389221caf29"
IDENTITY = {
    "name": "identityName",
    "type": "Microsoft.ManagedIdentity/userAssignedIdentities",
    "properties": {
        "clientId": CLIENT_ID,
        "principalId": "25cc773c-7f05-40fc-a104-32d2300754ad",
        "tenantId": "b6c948ef-f6b5-4384-8354-da3a15eca969",
    },
}


@pytest.fixture
def imds() -> Iterator[str]:
    FakeImds.tags = []
    with serve(FakeImds) as url:
        yield url


def _cyclecloud(folder: Path, log: Path, failing: str = "") -> None:
    """A cyclecloud stand-in recording its arguments and working folder; a call starting with `failing` fails."""
    script = folder / "cyclecloud"
    fail = f'case "$*" in "{failing}"*) exit 3;; esac\n' if failing else ""
    # `project fetch URL DIR` leaves DIR with the release's project.ini, as CycleCloud's fetch does: `[project]`
    # name = slurm, version = the release (Azure/cyclecloud-slurm@50e6739:project.ini l.1-4), or the name in
    # $HPCLZ_TEST_PROJECT_NAME. With one file in blobs/, where a project keeps the files its project.ini lists
    # (Azure/cyclecloud-slurm@50e6739:docker-package.sh l.22-46).
    fetch = (
        'if [ "$1 $2" = "project fetch" ]; then mkdir -p "$4/blobs" && '
        'printf "[project]\\nname = %s\\nversion = %s\\n" "${HPCLZ_TEST_PROJECT_NAME:-slurm}" "${3##*/}" '
        '> "$4/project.ini" && '
        f'printf %s "${{HPCLZ_TEST_RELEASE_BYTES:-{RELEASE_BYTES.decode()}}}" > "$4/blobs/{RELEASE_FILE}"; fi\n'
    )
    script.write_text(f'#!/bin/sh\necho "$(pwd) cyclecloud $*" >> {log}\n{fail}{fetch}exit 0\n', encoding="utf-8")
    script.chmod(0o755)


def _cycle_server(folder: Path) -> Path:
    """A `cycle_server` stand-in answering CycleCloud's record queries from two files, one answer a line, the first
    line taken per call until one is left: `lockers` holds the locker's State as time goes on ("Creating", then
    "Created"), `machine-types` the JSON rows of the machine-type query. `execute` filters on State=="Created" and the
    locker's name as the query does (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/install.sh l.273), so a locker
    still "Creating" answers nothing. Every call is recorded in `cs-calls`."""
    script = folder / "cycle_server"
    script.write_text(
        f"""#!/bin/bash
echo "$*" >> {folder}/cs-calls
take() {{ head -n1 "{folder}/$1"; [ "$(wc -l < "{folder}/$1")" -le 1 ] || sed -i 1d "{folder}/$1"; }}
if [ "$1" = execute ]; then
  case "$*" in
    *Cloud.Locker*) state=$(take lockers)
      case "$*" in *'State=="'$state'"'*'Name=="hpclz-storage"'*)
        printf 'AdType = "Cloud.Locker"\nName = "hpclz-storage"\nState = "%s"\n' "$state";; esac;;
    *Azure.MachineType*) take machine-types;;
  esac
fi
""",
        encoding="utf-8",
    )
    script.chmod(0o755)
    (folder / "lockers").write_text("Created\n", encoding="utf-8")
    (folder / "machine-types").write_text(json.dumps(LOADED) + "\n", encoding="utf-8")
    return script


# The machine-type query's rows (install.sh l.320-327) once CycleCloud has loaded the region's records.
LOADED = [{"Name": "scheduler", "MachineType": "Standard_D4as_v5", "CMName": "Standard_D4as_v5"}]


RELEASE_FILE = "azure-slurm-pkg-4.0.9.tar.gz"
RELEASE_BYTES = b"release-bytes"


def _packages(box: dict[str, Path], installed: str) -> None:
    """`rpm` and `yum` stand-ins for the image's cyclecloud8 package: `rpm -q --queryformat %{VERSION} cyclecloud8`
    answers the installed version, `yum -y upgrade cyclecloud8-X` records itself and installs X (or fails when
    $HPCLZ_TEST_YUM_FAILS is set); and the server's CLI zip (/opt/cycle_server/tools/cyclecloud-cli.zip, as the
    bootstrap installs it), whose install.sh records itself."""
    version = box["cs"] / "cyclecloud8-version"
    version.write_text(installed, encoding="utf-8")
    (box["bin"] / "rpm").write_text(f'#!/bin/sh\necho "rpm $*" >> {box["calls"]}\ncat {version}\n', encoding="utf-8")
    (box["bin"] / "yum").write_text(
        f'#!/bin/sh\necho "$(pwd) yum $*" >> {box["calls"]}\n[ -z "$HPCLZ_TEST_YUM_FAILS" ] || exit 1\n'
        f'printf %s "${{3#cyclecloud8-}}" > {version}\n',
        encoding="utf-8",
    )
    for name in ("rpm", "yum"):
        (box["bin"] / name).chmod(0o755)
    (box["cs"] / "tools").mkdir(exist_ok=True)
    with zipfile.ZipFile(box["cs"] / "tools" / "cyclecloud-cli.zip", "w") as cli:
        cli.writestr("cyclecloud-cli-installer/install.sh", f'echo "$(pwd) install.sh $*" >> {box["calls"]}\n')


@pytest.fixture
def box(tmp_path: Path) -> dict[str, Path]:
    folders = {name: tmp_path / name for name in ("bin", "state", "project", "cs", "repos", "cli")}
    for folder in folders.values():
        folder.mkdir()
    _cycle_server(folders["cs"])
    folders["calls"] = tmp_path / "calls.log"
    folders["log"] = tmp_path / "sync.log"
    _cyclecloud(folders["bin"], folders["calls"])
    _packages(folders, "8.9.1")  # the presets' release: nothing to upgrade
    return folders


def _document(stem: str = "finance") -> str:
    (compute,) = [d for d in preset_plan(stem).deployments if d.component == "compute"]
    return compute.artifacts["cloud-init/cyclecloud-userdata.json"]


def _secret_specs(stem: str = "finance") -> list[dict[str, str]]:
    return list(json.loads(json.loads(_document(stem)).get("secret_parameters") or "{}").values())


def _env(box: dict[str, Path], imds: str) -> dict[str, str]:
    return {
        **os.environ,
        "HPCLZ_IMDS_URL": imds,
        "PATH": f"{box['bin']}:{os.environ['PATH']}",
        "HPCLZ_CYCLE_SERVER": str(box["cs"] / "cycle_server"),
        "HPCLZ_POLL_SECONDS": "0",
        "HPCLZ_YUM_REPOS": str(box["repos"]),
        "HPCLZ_CLI_DIR": str(box["cli"]),
    }


def _command(box: dict[str, Path]) -> list[str]:
    args = ["--state", str(box["state"]), "--project", str(box["project"]), "--log", str(box["log"])]
    return [sys.executable, str(SYNC), *args]


def _run(box: dict[str, Path], imds: str, document: str, **env: str) -> tuple[int, list[str]]:
    FakeImds.user_data = user_data(document)
    done = subprocess.run(_command(box), env=_env(box, imds) | env, capture_output=True, text=True, timeout=60)
    lines = box["calls"].read_text(encoding="utf-8").splitlines() if box["calls"].exists() else []
    # The installed-version query every changed userData makes is not a call of interest here.
    calls = [c for c in lines if not c.startswith("rpm -q --queryformat %{VERSION} cyclecloud8")]
    box["calls"].unlink(missing_ok=True)
    return done.returncode, calls


def test_first_run_applies_the_account_uploads_the_project_and_imports(box: dict[str, Path], imds: str) -> None:
    rc, calls = _run(box, imds, _document())
    assert rc == 0
    state, project = box["state"], box["project"]
    release = f"{project}/slurm-4.0.9"
    assert calls == [
        f"{Path.cwd()} cyclecloud account edit hpclz -f {state}/azure-account.json",
        f"{Path.cwd()} cyclecloud project fetch https://github.com/Azure/cyclecloud-slurm/releases/4.0.9 {release}.tmp",
        f"{release} cyclecloud project upload hpclz-storage",
        f"{Path.cwd()} cyclecloud import_cluster riskgrid-prod -f {state}/slurm-cluster.txt "
        f"-p {state}/slurm-params.json --force",
        f"{Path.cwd()} cyclecloud start_cluster riskgrid-prod",
    ]
    document = json.loads(_document())
    assert (state / "slurm-cluster.txt").read_text(encoding="utf-8") == document["template"]
    parameters = json.loads((state / "slurm-params.json").read_text(encoding="utf-8"))
    assert parameters["NodeIdentities"].startswith(f"/subscriptions/{SUBSCRIPTION}/resourceGroups/")
    assert parameters["AccountingPassword"] == "preset-password"  # read from the vault stand-in
    account = json.loads((state / "azure-account.json").read_text(encoding="utf-8"))
    assert account["AzureRMSubscriptionId"] == SUBSCRIPTION
    # The account names the identity that holds CycleCloud's roles: the scheduler identity, by its client ID.
    assert account["AzureRMUseManagedIdentity"] is True and account["AzureRMApplicationId"] == CLIENT_ID
    (identity_get,) = [p for p in FakeArm.paths if "userAssignedIdentities" in p]
    assert identity_get.split("?")[0].endswith("/id-riskgrid-scheduler-prod-weu")
    assert (state / "azure-account.json").stat().st_mode & 0o077 == 0
    assert "imported and started" in box["log"].read_text(encoding="utf-8")


def test_unchanged_user_data_does_nothing(box: dict[str, Path], imds: str) -> None:
    _run(box, imds, _document())
    asked = FakeVault.gets
    rc, calls = _run(box, imds, _document())
    assert (rc, calls) == (0, [])
    assert (
        "userData unchanged, secrets read less than 1800 s ago: nothing to do"
        in (box["log"].read_text(encoding="utf-8").splitlines()[-1])
    )
    assert FakeVault.gets == asked, "Key Vault is not asked again within HPCLZ_VAULT_SECONDS"
    # Once that time has passed it is asked again, and the same versions are still nothing to do.
    assert _run(box, imds, _document(), HPCLZ_VAULT_SECONDS="0") == (0, [])
    assert FakeVault.gets > asked
    assert "userData and secrets unchanged" in box["log"].read_text(encoding="utf-8").splitlines()[-1]


def test_changed_user_data_asks_key_vault_at_once(box: dict[str, Path], imds: str) -> None:
    _run(box, imds, _document())
    FakeVault.secrets = {f"{spec['vault']}/{spec['name']}": "rotated-Passw0rd" for spec in _secret_specs()}
    document = json.loads(_document())
    document["template"] += "\n"
    rc, calls = _run(box, imds, json.dumps(document))
    assert rc == 0 and [c.split(" ", 2)[2].split(" ")[0] for c in calls] == ["import_cluster", "start_cluster"]
    params = json.loads((box["state"] / "slurm-params.json").read_text(encoding="utf-8"))
    assert params["AccountingPassword"] == "rotated-Passw0rd"


def test_a_rotated_secret_reimports_the_cluster_with_its_new_value(box: dict[str, Path], imds: str) -> None:
    """userData names the secret, not its value: a new version in Key Vault alone must reach the cluster parameter."""
    _run(box, imds, _document())
    FakeVault.secrets = {f"{spec['vault']}/{spec['name']}": "rotated-Passw0rd" for spec in _secret_specs()}
    # Within HPCLZ_VAULT_SECONDS of the last read the new version is not seen yet; it is not lost either.
    assert _run(box, imds, _document()) == (0, [])
    rc, calls = _run(box, imds, _document(), HPCLZ_VAULT_SECONDS="0")
    assert rc == 0
    assert [c.split(" ", 2)[2].split(" ")[0] for c in calls] == ["import_cluster", "start_cluster"]
    params = box["state"] / "slurm-params.json"
    assert json.loads(params.read_text(encoding="utf-8"))["AccountingPassword"] == "rotated-Passw0rd"
    assert params.stat().st_mode & 0o077 == 0
    log = box["log"].read_text(encoding="utf-8")
    assert "a secret's version changed" in log
    assert "rotated-Passw0rd" not in log and "preset-password" not in log
    assert _run(box, imds, _document()) == (0, [])  # the same version again: nothing to do


def test_changed_user_data_reimports_without_touching_the_account(box: dict[str, Path], imds: str) -> None:
    _run(box, imds, _document())
    document = json.loads(_document())
    document["template"] += '\n    [[nodearray viz]]\n    MachineType = "Standard_NV36ads_A10_v5"\n'
    rc, calls = _run(box, imds, json.dumps(document))
    assert rc == 0
    assert [c.split(" ", 2)[2].split(" ")[0] for c in calls] == ["import_cluster", "start_cluster"]
    assert "nodearray viz" in (box["state"] / "slurm-cluster.txt").read_text(encoding="utf-8")


def test_a_failed_import_is_retried_on_the_next_run(box: dict[str, Path], imds: str) -> None:
    _cyclecloud(box["bin"], box["calls"], failing="import_cluster")
    rc, calls = _run(box, imds, _document())
    assert rc == 1 and calls[-1].endswith("--force")
    assert "will retry" in box["log"].read_text(encoding="utf-8")
    _cyclecloud(box["bin"], box["calls"])
    rc, calls = _run(box, imds, _document())
    assert rc == 0
    # The account was applied by the failed run already; only the cluster is imported again.
    assert [c.split(" ", 2)[2].split(" ")[0] for c in calls] == ["import_cluster", "start_cluster"]


def test_an_account_that_does_not_exist_yet_is_created(box: dict[str, Path], imds: str) -> None:
    _cyclecloud(box["bin"], box["calls"], failing="account edit")
    rc, calls = _run(box, imds, _document())
    assert rc == 0
    commands = [c.split(" ", 2)[2] for c in calls]
    assert commands[:2] == [
        f"account edit hpclz -f {box['state']}/azure-account.json",
        f"account create -f {box['state']}/azure-account.json",
    ]
    assert commands[-1] == "start_cluster riskgrid-prod"


def test_user_data_that_is_not_an_hpclz_cluster_is_refused(box: dict[str, Path], imds: str) -> None:
    FakeImds.user_data = base64.b64encode(b'{"something": "else"}').decode()
    done = subprocess.run(_command(box), env=_env(box, imds), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "not an hpclz cluster definition" in box["log"].read_text(encoding="utf-8")
    assert not box["calls"].exists()


def _accounting_document() -> str:
    def edit(data: dict[str, Any]) -> None:
        data["compute"]["accounting"] = {
            "mode": "existing",
            "url": "slurmdb-prod.mysql.database.azure.com",
            "user": "slurmdbd",
            "password_secret_name": "slurmdb-password",
        }
        data["identity"]["key_vault"]["secrets"]["slurmdb-password"] = "${env:SLURMDB_PASSWORD}"

    (compute,) = [d for d in variant("finance", edit).deployments if d.component == "compute"]
    return compute.artifacts["cloud-init/cyclecloud-userdata.json"]


def test_the_accounting_password_is_read_from_key_vault_at_import(box: dict[str, Path], imds: str, vault: str) -> None:
    document = json.loads(_accounting_document())
    spec = json.loads(document["secret_parameters"])["AccountingPassword"]
    FakeVault.secrets = {f"{spec['vault']}/slurmdb-password": "s3cret-from-vault"}
    FakeImds.token_queries = []
    rc, calls = _run(box, imds, json.dumps(document))
    assert rc == 0 and calls[-1].endswith("start_cluster riskgrid-prod")
    params = box["state"] / "slurm-params.json"
    assert json.loads(params.read_text(encoding="utf-8"))["AccountingPassword"] == "s3cret-from-vault"
    assert params.stat().st_mode & 0o077 == 0
    assert "s3cret-from-vault" not in box["log"].read_text(encoding="utf-8")
    # One vault token; the other one is ARM's, for the account's client ID.
    (query,) = [q for q in FakeImds.token_queries if "vault.azure.net" in q]
    assert "resource=https%3A%2F%2Fvault.azure.net" in query
    assert f"mi_res_id=%2Fsubscriptions%2F{SUBSCRIPTION}%2FresourceGroups%2F" in query


def test_a_missing_accounting_secret_stops_the_import_and_is_retried(
    box: dict[str, Path], imds: str, vault: str
) -> None:
    FakeVault.secrets = {}
    rc, calls = _run(box, imds, _accounting_document())
    assert rc == 1
    assert not any("import_cluster" in c for c in calls)
    assert "HTTP Error 404" in box["log"].read_text(encoding="utf-8")


DIGEST = "0" * 63 + "1"


def _scheduler_wheel_lines(box: dict[str, Path]) -> list[str]:
    template = (box["state"] / "slurm-cluster.txt").read_text(encoding="utf-8")
    return [line for line in template.splitlines() if line.startswith(("WHEEL_SHA256=", "WHEEL_FILE="))]


def test_the_wheel_tag_gives_the_scheduler_its_digest(box: dict[str, Path], imds: str) -> None:
    """`hpclz deploy` tags the CycleCloud VM with the wheel it put in the locker."""
    FakeImds.tags = [
        {"name": "hpclz-zone", "value": "riskgrid"},
        {"name": "hpclz-wheel", "value": f"{DIGEST}/hpclz-0.1.0-py3-none-any.whl"},
    ]
    rc, _ = _run(box, imds, _document())
    assert rc == 0
    assert _scheduler_wheel_lines(box) == [f"WHEEL_SHA256={DIGEST}", "WHEEL_FILE=hpclz-0.1.0-py3-none-any.whl"]
    # A new wheel alone, same userData: the cluster is imported again with the new digest.
    FakeImds.tags = [{"name": "hpclz-wheel", "value": f"{'2' * 64}/hpclz-0.1.0-py3-none-any.whl"}]
    rc, calls = _run(box, imds, _document())
    assert rc == 0 and any("import_cluster" in call for call in calls)
    assert _scheduler_wheel_lines(box)[0] == "WHEEL_SHA256=" + "2" * 64


@pytest.mark.parametrize("value", ["", "not-a-digest/hpclz-0.1.0-py3-none-any.whl", f"{DIGEST}/../../etc/passwd"])
def test_a_missing_or_malformed_wheel_tag_leaves_the_scheduler_without_a_digest(
    box: dict[str, Path], imds: str, value: str
) -> None:
    FakeImds.tags = [{"name": "hpclz-wheel", "value": value}] if value else []
    rc, _ = _run(box, imds, _document())
    assert rc == 0  # the cluster still comes up; its scheduler refuses to install hpclz (test_install_wheel)
    assert _scheduler_wheel_lines(box) == ["WHEEL_SHA256=@HPCLZ_WHEEL_SHA256@", "WHEEL_FILE=@HPCLZ_WHEEL_FILE@"]
    assert "no hpclz wheel to install" in box["log"].read_text(encoding="utf-8")


VOLUME = json.loads(
    (
        Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "arm" / "netapp_volume_get_specexample.json"
    ).read_text()
)


class FakeArm(BaseHTTPRequestHandler):
    """ARM's GET of a NetApp volume (the 2024-07-01 spec's example body, with a mount target once `placed`) and of
    a user-assigned identity (IDENTITY)."""

    placed: ClassVar[bool] = False
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        assert self.headers["Authorization"] == "Bearer vault-token"
        FakeArm.paths.append(self.path)
        if "/Microsoft.ManagedIdentity/userAssignedIdentities/" in self.path:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(json.dumps(IDENTITY).encode())
            return
        body = json.loads(json.dumps(VOLUME["body"]))
        if self.placed:
            body["properties"]["mountTargets"] = [VOLUME["mount_target"]]
        self.send_response(200)
        self.end_headers()
        self.wfile.write(json.dumps(body).encode())

    def log_message(self, *args: Any) -> None:
        pass


def test_netapp_shared_home_addresses_are_read_from_arm_once_the_volumes_are_placed(
    box: dict[str, Path], imds: str
) -> None:
    """storage.shared mode netapp (manufacturing): the mounts name $SharedHomeAddress and $SharedSchedAddress, which
    hpclz-cluster-sync fills from each volume's properties.mountTargets[0].ipAddress with the scheduler identity."""
    document = json.loads(_document("manufacturing"))
    assert "address = $SharedHomeAddress" in document["template"]
    lookups = json.loads(document["arm_parameters"])
    assert sorted(lookups) == ["SharedHomeAddress", "SharedSchedAddress"]
    assert lookups["SharedHomeAddress"]["api"] == VOLUME["api_version"]
    FakeArm.paths, FakeArm.placed = [], False
    FakeImds.token_queries = []
    rc, calls = _run(box, imds, json.dumps(document))
    # Not placed yet (the spec's example has no mountTargets): no import, and the next run tries again.
    assert rc == 1 and not any("import_cluster" in c for c in calls)
    FakeArm.placed = True
    rc, calls = _run(box, imds, json.dumps(document))
    assert rc == 0 and calls[-1].endswith("start_cluster cae-test")
    parameters = json.loads((box["state"] / "slurm-params.json").read_text(encoding="utf-8"))
    assert parameters["SharedHomeAddress"] == parameters["SharedSchedAddress"] == "10.0.0.4"
    assert (
        FakeArm.paths[-1]
        == f"/subscriptions/{SUBSCRIPTION}/{lookups['SharedSchedAddress']['resource']}?api-version=2024-07-01"
    )
    assert any("resource=https%3A%2F%2Fmanagement.azure.com%2F" in q for q in FakeImds.token_queries)
    assert all("id-cae-scheduler-test-weu" in q for q in FakeImds.token_queries)


def test_a_new_cyclecloud_slurm_release_is_fetched_and_uploaded_once(box: dict[str, Path], imds: str) -> None:
    """The release is in userData: a new one reaches the server in place, fetched into its own folder."""
    _run(box, imds, _document())
    document = json.loads(_document())
    document["project"] = "https://github.com/Azure/cyclecloud-slurm/releases/4.0.10"
    rc, calls = _run(box, imds, json.dumps(document))
    assert rc == 0
    commands = [c.split(" ", 2)[2] for c in calls]
    assert commands[1].startswith("project fetch https://github.com/Azure/cyclecloud-slurm/releases/4.0.10 ")
    assert calls[2].startswith(f"{box['project']}/slurm-4.0.10 cyclecloud project upload")
    document["project"] = "https://example.com/releases/../../etc"
    rc, calls = _run(box, imds, json.dumps(document))
    assert rc == 1 and not any("project fetch" in c for c in calls)
    assert "names no cyclecloud-slurm release" in box["log"].read_text(encoding="utf-8")


def test_a_fetch_naming_another_project_or_version_is_never_uploaded(box: dict[str, Path], imds: str) -> None:
    """The cluster's specs run the upload stored under project.ini's name and version (`slurm:<spec>:4.0.9`, no
    cyclecloud/ prefix: learn.microsoft.com/azure/cyclecloud/cluster-references/cluster-init-reference); a fetch
    that is another project, or says another version than the release asked for, would leave them without it."""
    env = {**_env(box, imds), "HPCLZ_TEST_PROJECT_NAME": "ccw"}
    FakeImds.user_data = user_data(_document())
    done = subprocess.run(_command(box), env=env, capture_output=True, text=True, timeout=60)
    calls = box["calls"].read_text(encoding="utf-8").splitlines()
    box["calls"].unlink()
    assert done.returncode == 1
    assert any("project fetch" in c for c in calls)
    assert not any("project upload" in c or "import_cluster" in c for c in calls)
    assert not (box["project"] / "slurm-4.0.9").exists()
    assert "fetched 'ccw' '4.0.9', not slurm 4.0.9; not uploaded" in box["log"].read_text(encoding="utf-8")
    # The right name, but the fetch says another version than the release it was asked for.
    document = json.loads(_document())
    (box["project"] / "slurm-4.0.9").mkdir()
    (box["project"] / "slurm-4.0.9" / "project.ini").write_text("[project]\nname = slurm\nversion = 4.0.8\n")
    rc, calls = _run(box, imds, json.dumps(document))
    assert rc == 1 and not any("project upload" in c for c in calls)
    assert "fetched 'slurm' '4.0.8', not slurm 4.0.9; not uploaded" in box["log"].read_text(encoding="utf-8")
    # An unreadable project.ini (no section header) is thrown away as well.
    (box["project"] / "slurm-4.0.9").mkdir()
    (box["project"] / "slurm-4.0.9" / "project.ini").write_text("name = slurm\n")
    rc, calls = _run(box, imds, json.dumps(document))
    assert rc == 1 and not any("project upload" in c for c in calls)
    assert "fetched '' '', not slurm 4.0.9; not uploaded" in box["log"].read_text(encoding="utf-8")
    assert not (box["project"] / "slurm-4.0.9").exists()
    # Then the timer's next run fetches it again, and uploads what the specs name.
    rc, calls = _run(box, imds, json.dumps(document))
    assert rc == 0
    assert any(c.endswith("cyclecloud project upload hpclz-storage") for c in calls)


def test_the_specs_name_the_project_the_sync_uploads() -> None:
    """Every slurm spec of the rendered cluster names, without the cyclecloud/ prefix, the project and release that
    userData tells the sync to fetch, check and upload; no spec of that project keeps the prefix, which would make
    CycleCloud take it from GitHub itself (cluster-init-reference, above)."""
    for stem in ("finance", "ai-training"):
        document = json.loads(_document(stem))
        name, release = document["project_name"], document["project"].rsplit("/", 1)[-1]
        specs = re.findall(r"^\s*\[\[\[cluster-init ([^\]]+)\]\]\]\s*$", document["template"], re.MULTILINE)
        assert specs
        assert not [s for s in specs if s.startswith(f"cyclecloud/{name}:")], stem
        ours = [s for s in specs if s.split(":", 1)[0] == name]
        assert sorted(set(ours)) == sorted(
            f"{name}:{role}:{release}" for role in ("default", "execute", "login", "scheduler")
        )
        # Only healthagent and monitoring, which hpclz does not upload, keep the prefix (docs/ccws-parity.md).
        assert {s for s in specs if s not in ours} == {
            "cyclecloud/healthagent:default",
            "cyclecloud/monitoring:default",
        }


def _pinned(digests: dict[str, str]) -> str:
    document = json.loads(_document())
    document["project_sha256"] = json.dumps(digests)
    return json.dumps(document)


def test_a_release_matching_its_pinned_digests_is_uploaded(box: dict[str, Path], imds: str) -> None:
    rc, calls = _run(box, imds, _pinned({RELEASE_FILE: hashlib.sha256(RELEASE_BYTES).hexdigest()}))
    assert rc == 0
    assert any(c.endswith("cyclecloud project upload hpclz-storage") for c in calls)


def test_a_release_that_differs_from_its_digests_is_never_uploaded(box: dict[str, Path], imds: str) -> None:
    """A changed file, a missing one or an unpinned one: the fetch is thrown away, the next run fetches again."""
    good = hashlib.sha256(RELEASE_BYTES).hexdigest()
    for digests in ({RELEASE_FILE: "0" * 64}, {RELEASE_FILE: good, "azure-slurm-install-pkg-4.0.9.tar.gz": good}, {}):
        if not digests:
            digests = {"other.tar.gz": good}  # the fetched file is not pinned at all
        rc, calls = _run(box, imds, _pinned(digests))
        assert rc == 1
        assert not any("project upload" in c or "import_cluster" in c for c in calls)
        assert not (box["project"] / "slurm-4.0.9").exists()
        assert "does not match its pinned SHA-256, not uploaded" in box["log"].read_text(encoding="utf-8")


def test_the_config_pins_the_release_in_user_data() -> None:
    digest = hashlib.sha256(RELEASE_BYTES).hexdigest()

    def pin(data: dict[str, Any]) -> None:
        data["compute"]["cyclecloud"]["slurm_project_sha256"] = {RELEASE_FILE: digest}

    (compute,) = [d for d in variant("finance", pin).deployments if d.component == "compute"]
    document = json.loads(compute.artifacts["cloud-init/cyclecloud-userdata.json"])
    assert json.loads(document["project_sha256"]) == {RELEASE_FILE: digest}
    assert "project_sha256" not in json.loads(_document())  # the presets pin nothing: no public digest was read


def _record(box: dict[str, Path]) -> tuple[str, dict[str, Any] | None]:
    """The locker path of the release's record (userData's project_record) and what the locker holds there."""
    spec = json.loads(json.loads(_document())["project_record"])
    path = f"/{spec['account']}/{spec['container']}/{spec['blob']}"
    body = FakeBlob.blobs.get(path)
    return path, json.loads(body) if body is not None else None


def _rebuilt(box: dict[str, Path]) -> None:
    """A new server: no local state and no fetch kept, the same locker."""
    for name in ("state", "project"):
        shutil.rmtree(box[name])
        box[name].mkdir()
    box["log"].unlink(missing_ok=True)


def test_the_first_fetch_records_each_files_digest_in_the_locker_and_the_log(box: dict[str, Path], imds: str) -> None:
    digest = hashlib.sha256(RELEASE_BYTES).hexdigest()
    rc, calls = _run(box, imds, _document())
    assert rc == 0 and any(c.endswith("cyclecloud project upload hpclz-storage") for c in calls)
    path, record = _record(box)
    assert path.endswith("/hpclz/cyclecloud-slurm-4.0.9.sha256.json")
    assert record == {
        "source": "https://github.com/Azure/cyclecloud-slurm/releases/4.0.9",
        "sha256": {RELEASE_FILE: digest},
    }
    ((_, headers, _),) = [p for p in FakeBlob.puts if p[0] == path]
    # Written once, never over a record another server made, with CycleCloud's identity.
    assert headers["if-none-match"] == "*" and headers["authorization"] == "Bearer vault-token"
    assert f"cyclecloud-slurm 4.0.9: recorded {RELEASE_FILE} sha256 {digest} in hpclz/" in box["log"].read_text()
    # A rebuilt server's fetch of the same files matches the record: uploaded, the record left as it was.
    _rebuilt(box)
    rc, calls = _run(box, imds, _document())
    assert rc == 0 and any(c.endswith("cyclecloud project upload hpclz-storage") for c in calls)
    assert len([p for p in FakeBlob.puts if p[0] == path]) == 1


def test_a_later_fetch_that_differs_from_the_record_is_refused_and_uploads_nothing(
    box: dict[str, Path], imds: str
) -> None:
    _run(box, imds, _document())
    path, record = _record(box)
    _rebuilt(box)
    rc, calls = _run(box, imds, _document(), HPCLZ_TEST_RELEASE_BYTES="swapped-bytes")
    assert rc == 1
    assert any("project fetch" in c for c in calls)
    assert not any("project upload" in c or "import_cluster" in c for c in calls)
    assert not (box["project"] / "slurm-4.0.9").exists()  # thrown away: the next run fetches again
    (line,) = [x for x in box["log"].read_text().splitlines() if "failed, will retry" in x]
    swapped = hashlib.sha256(b"swapped-bytes").hexdigest()
    assert line.endswith(
        f"cyclecloud-slurm 4.0.9 differs from its first fetch recorded in {path.split('/', 2)[2]} in storage account "
        f"{path.split('/')[1]}, not uploaded: {RELEASE_FILE} ({swapped[:12]}, recorded "
        f"{hashlib.sha256(RELEASE_BYTES).hexdigest()[:12]})"
    )
    assert _record(box) == (path, record)  # the record stands
    # GitHub serves the release it first served again: uploaded.
    rc, calls = _run(box, imds, _document())
    assert rc == 0 and any(c.endswith("cyclecloud project upload hpclz-storage") for c in calls)


def test_configured_digests_that_disagree_with_the_record_fail_loudly(box: dict[str, Path], imds: str) -> None:
    _run(box, imds, _document())
    path, record = _record(box)
    _rebuilt(box)
    other = hashlib.sha256(b"other-bytes").hexdigest()
    rc, calls = _run(box, imds, _pinned({RELEASE_FILE: other}), HPCLZ_TEST_RELEASE_BYTES="other-bytes")
    assert rc == 1
    assert not any("project upload" in c or "import_cluster" in c for c in calls)
    (line,) = [x for x in box["log"].read_text().splitlines() if "failed, will retry" in x]
    assert "compute.cyclecloud.slurm_project_sha256 disagrees with the digests recorded at the first fetch" in line
    assert f"{RELEASE_FILE} ({other[:12]}, recorded {hashlib.sha256(RELEASE_BYTES).hexdigest()[:12]})" in line
    assert _record(box) == (path, record)


def test_configured_digests_win_over_the_first_fetch(box: dict[str, Path], imds: str) -> None:
    """Pinned, the first fetch is checked against the config before anything is recorded: a swapped asset is neither
    uploaded nor recorded; the fetch that matches the pin is what the record then holds."""
    good = hashlib.sha256(RELEASE_BYTES).hexdigest()
    rc, calls = _run(box, imds, _pinned({RELEASE_FILE: good}), HPCLZ_TEST_RELEASE_BYTES="swapped-bytes")
    assert rc == 1 and not any("project upload" in c for c in calls)
    assert "does not match its pinned SHA-256, not uploaded" in box["log"].read_text()
    assert _record(box)[1] is None
    rc, calls = _run(box, imds, _pinned({RELEASE_FILE: good}))
    assert rc == 0 and any(c.endswith("cyclecloud project upload hpclz-storage") for c in calls)
    assert _record(box)[1] == {
        "source": "https://github.com/Azure/cyclecloud-slurm/releases/4.0.9",
        "sha256": {RELEASE_FILE: good},
    }


def test_a_first_fetch_without_files_is_neither_recorded_nor_uploaded(box: dict[str, Path], imds: str) -> None:
    """4.0.9's project.ini lists three files ([blobs] Files, Azure/cyclecloud-slurm@50e6739:project.ini:7-8): a fetch
    that brought none would otherwise be recorded as the release, and every good fetch after it refused."""
    script = box["bin"] / "cyclecloud"
    script.write_text(script.read_text().replace(f'"$4/blobs/{RELEASE_FILE}"', "/dev/null"), encoding="utf-8")
    rc, calls = _run(box, imds, _document())
    assert rc == 1 and not any("project upload" in c for c in calls)
    assert "the fetch holds no blobs/ files; nothing recorded or uploaded" in box["log"].read_text()
    assert _record(box)[1] is None and not (box["project"] / "slurm-4.0.9").exists()


def test_a_locker_that_refuses_the_record_fails_the_run_before_the_upload(box: dict[str, Path], imds: str) -> None:
    FakeBlob.status, FakeBlob.refused = 403, ".sha256.json"
    try:
        rc, calls = _run(box, imds, _document())
    finally:
        FakeBlob.refused = "/current"
    assert rc == 1 and not any("project upload" in c for c in calls)
    assert "HTTP Error 403" in box["log"].read_text()


def _cs_calls(box: dict[str, Path]) -> list[str]:
    return (box["cs"] / "cs-calls").read_text(encoding="utf-8").splitlines()


def test_the_project_is_uploaded_only_once_the_locker_is_created(box: dict[str, Path], imds: str) -> None:
    """CCWS waits for Cloud.Locker State "Created" before its first upload (Azure/cyclecloud-slurm-workspace@bc0fc1b:
    bicep/install.sh l.269-284): a locker still "Creating" is waited for, not uploaded to."""
    (box["cs"] / "lockers").write_text("Creating\nCreating\nCreating\nCreated\n", encoding="utf-8")
    rc, calls = _run(box, imds, _document())
    assert rc == 0 and calls[-1].endswith("start_cluster riskgrid-prod")
    queries = [c for c in _cs_calls(box) if "Cloud.Locker" in c]
    assert len(queries) == 4 and all('State=="Created" && Name=="hpclz-storage"' in q for q in queries)
    assert not any("Retry:Cloud.Locker" in c for c in _cs_calls(box))  # found within the first two minutes


def test_a_locker_never_created_is_retried_as_ccws_does_then_fails_this_run_visibly(
    box: dict[str, Path], imds: str
) -> None:
    (box["cs"] / "lockers").write_text("Creating\n", encoding="utf-8")
    rc, calls = _run(box, imds, _document())
    assert rc == 1
    assert not any("project upload" in c or "import_cluster" in c for c in calls)
    cs = _cs_calls(box)
    # Every 24 checks (two minutes at CCWS's 5 s), one Retry:Cloud.Locker; five rounds, then this run gives up.
    assert cs.count('run_action Retry:Cloud.Locker -f Name=="hpclz-storage"') == 5
    assert sum("Cloud.Locker where" in c for c in cs) == 5 * 24
    (line,) = [x for x in box["log"].read_text(encoding="utf-8").splitlines() if "failed, will retry" in x]
    assert line.endswith("locker hpclz-storage did not reach state Created in 5 retries; nothing uploaded")
    # The next run (the timer) finds it created and carries on.
    (box["cs"] / "lockers").write_text("Created\n", encoding="utf-8")
    rc, calls = _run(box, imds, _document())
    assert rc == 0 and calls[-1].endswith("start_cluster riskgrid-prod")


def test_the_cluster_starts_once_its_machine_types_are_known(box: dict[str, Path], imds: str) -> None:
    """CCWS loads the region's machine types (plugin.azure.monitor_reference) and waits until every node of the cluster
    has its Azure.MachineType and Cloud.MachineType records before start_cluster (bicep/install.sh l.316-340)."""
    unknown = [{"Name": "scheduler", "MachineType": None, "CMName": None}]
    lines = [json.dumps(unknown), json.dumps(unknown), json.dumps(LOADED)]
    (box["cs"] / "machine-types").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rc, calls = _run(box, imds, _document())
    assert rc == 0
    cs = _cs_calls(box)
    assert cs[-4] == "run_action Run:Application.Timer -eq Name plugin.azure.monitor_reference"
    assert [c.startswith("execute --format json SELECT Name, M.Name") for c in cs[-3:]] == [True] * 3
    assert 'WHERE ClusterName == "riskgrid-prod"' in cs[-1]
    assert [c.split(" ", 2)[2].split(" ")[0] for c in calls[-2:]] == ["import_cluster", "start_cluster"]


def test_machine_types_never_known_fail_the_run_before_start_with_one_line(box: dict[str, Path], imds: str) -> None:
    unknown = [{"Name": "scheduler", "MachineType": "Standard_D4as_v5", "CMName": None}]
    (box["cs"] / "machine-types").write_text(json.dumps(unknown) + "\n", encoding="utf-8")
    rc, calls = _run(box, imds, _document())
    assert rc == 1
    assert calls[-1].endswith("--force")  # imported, never started
    assert sum(c.startswith("execute --format json") for c in _cs_calls(box)) == 60
    (line,) = [x for x in box["log"].read_text(encoding="utf-8").splitlines() if "failed, will retry" in x]
    assert line.endswith("no machine-type record for node(s) scheduler of riskgrid-prod after 60 checks; not started")


def _wheel_puts() -> list[tuple[str, dict[str, str], bytes]]:
    """The Puts of the wheel pointer, `current`, among those of the release's record (cyclecloud-slurm-*.sha256.json)."""
    return [put for put in FakeBlob.puts if put[0].endswith("/current")]


def test_the_tags_wheel_is_published_in_the_locker_for_a_running_scheduler(box: dict[str, Path], imds: str) -> None:
    """The scheduler's hpclz-wheel-update timer reads the locker's `current` blob (test_install_wheel); it is written
    with CycleCloud's identity, after the cluster was imported with the same wheel."""
    FakeImds.tags = [{"name": "hpclz-wheel", "value": f"{DIGEST}/hpclz-0.1.0-py3-none-any.whl"}]
    FakeImds.token_queries = []
    rc, _ = _run(box, imds, _document())
    assert rc == 0
    spec = json.loads(json.loads(_document())["wheel_locker"])
    assert spec["container"] == "hpclz" and spec["identity"].endswith("/id-riskgrid-scheduler-prod-weu")
    ((path, headers, body),) = _wheel_puts()
    assert path == f"/{spec['account']}/hpclz/current"
    assert body == f"{DIGEST}/hpclz-0.1.0-py3-none-any.whl\n".encode()
    assert headers["x-ms-blob-type"] == "BlockBlob" and headers["authorization"] == "Bearer vault-token"
    assert headers["x-ms-version"] >= "2017-11-09"  # bearer tokens need it (authorize-with-azure-active-directory)
    storage = [q for q in FakeImds.token_queries if "storage.azure.com" in q]  # the release's record's and the wheel's
    assert storage and all("id-riskgrid-scheduler-prod-weu" in q for q in storage)
    # A second deploy's wheel is published again; the same one is not.
    _run(box, imds, _document())
    FakeImds.tags = [{"name": "hpclz-wheel", "value": f"{'2' * 64}/hpclz-0.1.0-py3-none-any.whl"}]
    rc, _ = _run(box, imds, _document())
    assert rc == 0 and [b for _, _, b in _wheel_puts()][1:] == [f"{'2' * 64}/hpclz-0.1.0-py3-none-any.whl\n".encode()]


def test_no_wheel_tag_publishes_nothing(box: dict[str, Path], imds: str) -> None:
    rc, _ = _run(box, imds, _document())
    assert rc == 0 and _wheel_puts() == []


def test_a_refused_publication_fails_the_run_and_is_retried(box: dict[str, Path], imds: str) -> None:
    FakeImds.tags = [{"name": "hpclz-wheel", "value": f"{DIGEST}/hpclz-0.1.0-py3-none-any.whl"}]
    FakeBlob.status = 403
    rc, _ = _run(box, imds, _document())
    assert rc == 1 and "HTTP Error 403" in box["log"].read_text(encoding="utf-8")
    FakeBlob.status = 201
    rc, calls = _run(box, imds, _document())
    assert rc == 0 and len(_wheel_puts()) == 2 and calls[-1].endswith("start_cluster riskgrid-prod")


def _at(document: str, version: str) -> str:
    data = json.loads(document)
    data["cyclecloud_version"] = version
    return json.dumps(data)


def test_a_newer_cyclecloud_release_is_an_in_place_package_upgrade_before_the_import(
    box: dict[str, Path], imds: str
) -> None:
    _packages(box, "8.9.0")
    rc, calls = _run(box, imds, _at(_document(), "8.9.1"))
    assert rc == 0, box["log"].read_text(encoding="utf-8")
    cli = box["cli"] / "cyclecloud-cli-installer"
    assert calls[:2] == [f"{Path.cwd()} yum -y upgrade cyclecloud8-8.9.1", f"{cli} install.sh --system"]
    assert [c.split(" ", 2)[2].split(" ")[0] for c in calls[2:]] == [
        "account",
        "project",
        "project",
        "import_cluster",
        "start_cluster",
    ]
    # Microsoft's repository as the manual installation configures it, added when no repository names it.
    assert "baseurl=https://packages.microsoft.com/yumrepos/cyclecloud\n" in (
        box["repos"] / "cyclecloud.repo"
    ).read_text(encoding="utf-8")
    assert "await_startup" in (box["cs"] / "cs-calls").read_text(encoding="utf-8").splitlines()
    assert "upgrading CycleCloud 8.9.0 -> 8.9.1 in place" in box["log"].read_text(encoding="utf-8")


def test_a_repository_already_configured_is_kept(box: dict[str, Path], imds: str) -> None:
    _packages(box, "8.9.0")
    (box["repos"] / "microsoft-cyclecloud.repo").write_text(
        "[cc]\nbaseurl=https://packages.microsoft.com/yumrepos/cyclecloud\n", encoding="utf-8"
    )
    assert _run(box, imds, _at(_document(), "8.9.1"))[0] == 0
    assert sorted(p.name for p in box["repos"].iterdir()) == ["microsoft-cyclecloud.repo"]


def test_the_release_already_running_installs_nothing(box: dict[str, Path], imds: str) -> None:
    _packages(box, "8.9.1-3570")  # an RPM version with its build: the release is what counts
    rc, calls = _run(box, imds, _at(_document(), "8.9.1"))
    assert rc == 0 and not [c for c in calls if " yum " in c or "install.sh" in c]


def test_a_failed_upgrade_stops_the_run_before_the_import_and_is_retried(
    box: dict[str, Path], imds: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _packages(box, "8.9.0")
    monkeypatch.setenv("HPCLZ_TEST_YUM_FAILS", "1")
    rc, calls = _run(box, imds, _at(_document(), "8.9.1"))
    assert rc == 1 and calls == [f"{Path.cwd()} yum -y upgrade cyclecloud8-8.9.1"]
    assert "yum could not upgrade cyclecloud8 to 8.9.1" in box["log"].read_text(encoding="utf-8")
    monkeypatch.delenv("HPCLZ_TEST_YUM_FAILS")
    rc, calls = _run(box, imds, _at(_document(), "8.9.1"))
    assert rc == 0 and calls[0] == f"{Path.cwd()} yum -y upgrade cyclecloud8-8.9.1"


def test_a_server_running_a_newer_release_is_never_downgraded(box: dict[str, Path], imds: str) -> None:
    rc, calls = _run(box, imds, _at(_document(), "8.9.0"))
    assert rc == 0 and not [c for c in calls if " yum " in c or "install.sh" in c]
    assert calls[-1].endswith("start_cluster riskgrid-prod")  # the sync goes on with the release that runs
    assert "CycleCloud 8.9.1 runs here, newer than userData's 8.9.0; never downgraded" in box["log"].read_text(
        encoding="utf-8"
    )


def _debian_packages(box: dict[str, Path], installed: str | None) -> None:
    """No rpm; a `dpkg-query` stand-in answering `dpkg-query -W -f=${Version} cyclecloud8` as dpkg does (exit 1 when
    the package is not installed), ahead of the host's own on PATH."""
    (box["bin"] / "rpm").unlink(missing_ok=True)
    answer = f"printf %s {installed}" if installed else "exit 1"
    script = box["bin"] / "dpkg-query"
    script.write_text(f'#!/bin/sh\necho "dpkg-query $*" >> {box["calls"]}\n{answer}\n', encoding="utf-8")
    script.chmod(0o755)


def test_a_debian_packaged_server_is_not_upgraded_behind_the_operators_back(box: dict[str, Path], imds: str) -> None:
    _debian_packages(box, "8.9.0-3500")
    rc, calls = _run(box, imds, _at(_document(), "8.9.1"))
    assert rc == 1 and not [c for c in calls if not c.startswith("dpkg-query")]  # nothing imported, nothing run
    assert "run `sudo apt update && sudo apt -y upgrade cyclecloud8` on this server" in box["log"].read_text(
        encoding="utf-8"
    )
    _debian_packages(box, "8.9.1-3600")  # the operator upgraded it
    rc, calls = _run(box, imds, _at(_document(), "8.9.1"))
    assert rc == 0 and calls[-1].endswith("start_cluster riskgrid-prod")


def test_a_server_whose_package_no_tool_knows_is_synced_without_an_upgrade(box: dict[str, Path], imds: str) -> None:
    _debian_packages(box, None)
    rc, calls = _run(box, imds, _at(_document(), "8.9.1"))
    assert rc == 0 and calls[-1].endswith("start_cluster riskgrid-prod")
    assert "neither rpm nor dpkg knows a cyclecloud8 package here" in box["log"].read_text(encoding="utf-8")


def test_user_data_names_the_release_the_server_runs() -> None:
    assert json.loads(_document())["cyclecloud_version"] == "8.9.1"
