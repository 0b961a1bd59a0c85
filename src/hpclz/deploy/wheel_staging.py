"""The hpclz wheel into a private locker from outside its network: through the CycleCloud VM, by managed Run Command.

The locker takes data-plane calls only through its private endpoint (`publicNetworkAccess: Disabled`, docs/deploy.md
"Where deploy runs from"), so from a workstation its Blob endpoint answers 403 AuthorizationFailure. The control
plane still reaches a VM inside the VNet: a managed Run Command (PUT .../virtualMachines/{vm}/runCommands/{name},
learn.microsoft.com/azure/virtual-machines/linux/run-command-managed) runs a script there as root. The CycleCloud VM
is in the zone's VNet, resolves the locker through the privatelink zone its network links, and carries CycleCloud's
identity, which holds Storage Blob Data Contributor on the locker (hpclz.render.roles.locker_assignments).

So the wheel travels as pieces, each its own run command whose script holds the piece in base64 and the piece's
SHA-256; the VM writes a piece only when it matches. A last run command joins the pieces, checks the whole file
against the SHA-256 hpclz computed, and only then puts it in the locker with the VM's identity (a token from the
instance metadata service for that identity, `mi_res_id`: learn.microsoft.com/entra/identity/managed-identities-
azure-resources/how-to-use-vm-token), under the same "<sha256>/<file>" name the scheduler then checks again.

Limits: Learn's Run Command pages state no size for an inline script (run-command.md "Restrictions" lists output,
time and concurrency only), so each script is kept under 128 KiB, the Linux kernel's limit on one argument or
environment string (MAX_ARG_STRLEN, 32 pages: man7.org/linux/man-pages/man2/execve.2.html, "Limits on size of
arguments and environment"), which it stays within however the agent hands it to the shell. A VM holds at most 25
managed run commands ("The maximum number of allowed Managed Run Commands is currently limited to 25",
learn.microsoft.com/azure/virtual-machines/run-command-overview): each is deleted once it ends, so one exists at a
time. Interrupted and run again, the pieces are sent again under the same names (a run command of that name is
replaced) and rewritten whole; the last step removes the VM's staging folder whether it succeeds or not.
"""

from __future__ import annotations

import base64
import hashlib
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from hpclz.deploy.wheel import Wheel
from hpclz.errors import ExitCode, HpclzError

SCRIPT_LIMIT = 128 * 1024  # bytes: MAX_ARG_STRLEN (see above)
LINE = 57  # bytes per base64 line of 76 characters
PIECE_BYTES = LINE * 1600  # 91,200 bytes: 123,200 characters of base64, with room for the script around them
STAGE_DIR = "${HPCLZ_STAGE_DIR:-/var/tmp}"  # HPCLZ_STAGE_DIR: a test's folder in place of the VM's /var/tmp
PIECE_TIMEOUT_S = 300
UPLOAD_TIMEOUT_S = 900  # the upload retries while the identity's role assignment propagates


class WheelStagingError(HpclzError):
    exit_code = ExitCode.AZURE_ERROR


@dataclass(frozen=True)
class Locker:
    """Where the VM puts the wheel: the locker account and container, and the full resource ID of the VM's user-
    assigned identity that may write it."""

    account: str
    container: str
    identity: str


def pieces(data: bytes) -> list[bytes]:
    return [data[i : i + PIECE_BYTES] for i in range(0, len(data), PIECE_BYTES)] or [b""]


def folder(wheel: Wheel) -> str:
    return f"{STAGE_DIR}/hpclz-wheel-{wheel.sha256}"


def piece_script(wheel: Wheel, index: int, total: int, piece: bytes) -> str:
    """Write piece `index` on the VM, only if it arrived whole (its own SHA-256)."""
    text = base64.b64encode(piece).decode()
    lines = "\n".join(text[i : i + 76] for i in range(0, len(text), 76))
    digest = hashlib.sha256(piece).hexdigest()
    part = f'"$d/{index}.part"'
    script = f"""#!/bin/bash
# hpclz deploy: piece {index + 1} of {total} of {wheel.name} (sha256 {wheel.sha256}) for the CycleCloud locker.
set -euo pipefail
umask 077
d="{folder(wheel)}"
mkdir -p "$d"
base64 -d > {part} <<'HPCLZ_PIECE'
{lines}
HPCLZ_PIECE
actual=$(sha256sum {part} | cut -d' ' -f1)
if [ "$actual" != {digest} ]; then
  rm -f {part}
  echo "hpclz-stage: piece {index + 1} of {total} refused: its SHA-256 is $actual, expected {digest}" >&2
  exit 1
fi
mv {part} "$d/{index}"
echo "hpclz-stage: piece {index + 1} of {total} written"
"""
    if len(script.encode()) > SCRIPT_LIMIT:  # PIECE_BYTES is chosen so that this never happens
        raise WheelStagingError(f"piece {index + 1} of {wheel.name}: a {len(script.encode())}-byte script")
    return script


# The upload, run by python3 on the VM (AlmaLinux's platform Python; standard library only). Put Blob with a bearer
# token: x-ms-blob-type BlockBlob, x-ms-version 2017-11-09 or later for Entra ID, and If-None-Match: * so an existing
# blob (same name, so same digest) is left as it is: 409 BlobAlreadyExists
# (learn.microsoft.com/rest/api/storageservices/put-blob, "Request headers"; .../authorize-with-azure-active-directory;
# .../specifying-conditional-headers-for-blob-service-operations). One Put Blob holds up to 5000 MiB (Put Blob,
# "Remarks", version 2019-12-12 and later). HPCLZ_IMDS_URL and HPCLZ_BLOB_URL point it at stand-ins in tests, as
# hpclz-locker-get does on the nodes.
UPLOAD = r"""
import json, os, sys, time, urllib.error, urllib.parse, urllib.request
path, identity, account, container, blob = sys.argv[1:6]
imds = os.environ.get("HPCLZ_IMDS_URL", "http://169.254.169.254")
base = os.environ.get("HPCLZ_BLOB_URL", "https://{account}.blob.core.windows.net").format(account=account)
attempts = int(os.environ.get("HPCLZ_LOCKER_ATTEMPTS", "20"))
query = urllib.parse.urlencode(
    {"api-version": "2018-02-01", "resource": "https://storage.azure.com/", "mi_res_id": identity}
)
data = open(path, "rb").read()
url = base + "/" + container + "/" + urllib.parse.quote(blob)
for attempt in range(attempts):
    try:
        request = urllib.request.Request(imds + "/metadata/identity/oauth2/token?" + query, headers={"Metadata": "true"})
        with urllib.request.urlopen(request, timeout=60) as response:
            token = json.loads(response.read().decode())["access_token"]
        headers = {
            "Authorization": "Bearer " + token,
            "x-ms-version": "2021-08-06",
            "x-ms-blob-type": "BlockBlob",
            "If-None-Match": "*",
            "Content-Type": "application/octet-stream",
        }
        put = urllib.request.Request(url, data=data, headers=headers, method="PUT")
        with urllib.request.urlopen(put, timeout=300):
            print("hpclz-stage: put " + container + "/" + blob + " in " + account)
            sys.exit(0)
    except urllib.error.HTTPError as exc:
        code = exc.headers.get("x-ms-error-code") or str(exc.code)
        if code == "BlobAlreadyExists":
            print("hpclz-stage: " + container + "/" + blob + " is in " + account + " already")
            sys.exit(0)
        why = code
    except (OSError, KeyError, ValueError) as exc:
        why = str(exc)
    print("hpclz-stage: " + account + "/" + container + "/" + blob + ": " + why, file=sys.stderr)
    if attempt + 1 < attempts:
        time.sleep(min(10 * (attempt + 1), 60))
sys.exit(1)
"""


def upload_script(wheel: Wheel, total: int, locker: Locker) -> str:
    """Join the pieces, check the whole file against hpclz's SHA-256, put it in the locker; remove the folder."""
    names = " ".join(f'"$d/{i}"' for i in range(total))
    args = " ".join(shlex.quote(a) for a in (locker.identity, locker.account, locker.container, wheel.blob))
    return f"""#!/bin/bash
# hpclz deploy: {wheel.name} (sha256 {wheel.sha256}) into the CycleCloud locker {locker.account}.
set -euo pipefail
umask 077
d="{folder(wheel)}"
trap 'rm -rf "$d"' EXIT
for i in $(seq 0 {total - 1}); do
  [ -f "$d/$i" ] || {{ echo "hpclz-stage: piece $((i + 1)) of {total} is missing on this VM" >&2; exit 1; }}
done
cat {names} > "$d/wheel"
actual=$(sha256sum "$d/wheel" | cut -d' ' -f1)
if [ "$actual" != {wheel.sha256} ]; then
  echo "hpclz-stage: refused {wheel.name}: its SHA-256 is $actual, expected {wheel.sha256}" >&2
  exit 1
fi
python3 - "$d/wheel" {args} <<'HPCLZ_UPLOAD'
{UPLOAD.strip()}
HPCLZ_UPLOAD
"""


RunInline = Callable[[str, str, int], tuple[bool, str]]  # (run command name, script, timeout) -> (succeeded, output)


def stage(wheel: Wheel, locker: Locker, run: RunInline, progress: Callable[[str], None]) -> None:
    """Send the pieces, then the upload; one error line (the VM's own last line) when any step fails."""
    parts = pieces(wheel.path.read_bytes())
    tag = wheel.sha256[:12]
    for index, piece in enumerate(parts):
        ok, said = run(f"hpclz-wheel-{tag}-{index}", piece_script(wheel, index, len(parts), piece), PIECE_TIMEOUT_S)
        if not ok:
            raise WheelStagingError(f"staging {wheel.name} through the CycleCloud VM: {said}")
        progress(f"piece {index + 1} of {len(parts)} on the CycleCloud VM")
    ok, said = run(f"hpclz-wheel-{tag}-upload", upload_script(wheel, len(parts), locker), UPLOAD_TIMEOUT_S)
    if not ok:
        raise WheelStagingError(f"staging {wheel.name} through the CycleCloud VM: {said}")
