"""The wheel of an installed (non-editable) hpclz, rebuilt from its installed files as its RECORD lists them.

An installed hpclz keeps no copy of the wheel it came from, but its RECORD names every file the wheel put in
site-packages with that file's SHA-256 ("Recording installed projects",
https://packaging.python.org/en/latest/specifications/recording-installed-packages/). Those files, checked against
their recorded hashes, are the wheel's files: this module writes them back into a PEP 427 wheel
(https://packaging.python.org/en/latest/specifications/binary-distribution-format/) with a fresh RECORD. A file that
no longer matches its hash stops it: a wheel that differs from what was installed must not go to the cluster.

The archive is deterministic (sorted entries, one fixed date, fixed permissions, fixed compression level), so the
same install always gives the same bytes with the same zlib, and so the same SHA-256: an unchanged hpclz redeploys
nothing.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from importlib import metadata
from pathlib import Path, PurePosixPath

from hpclz.errors import ExitCode, HpclzError

DIST = "hpclz"
# Files an installer adds to .dist-info that no wheel carries (recording-installed-packages: INSTALLER, REQUESTED,
# direct_url.json); RECORD is written afresh.
INSTALLER_FILES = frozenset({"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"})
# ZIP cannot store dates before 1980; a fixed one makes the archive's bytes depend on the files alone.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
FILE_MODE = 0o100644  # a regular file, rw-r--r--, in the high 16 bits of external_attr (as Unix zip writes it)
ALLOWED_HASHES = frozenset({"sha256", "sha384", "sha512", "sha3_256", "sha3_384", "sha3_512", "blake2b"})


def record_digest(data: bytes, algorithm: str = "sha256") -> str:
    """`<algorithm>=<urlsafe base64 of the digest, no padding>`, as RECORD writes a hash (binary-distribution-format)."""
    raw = hashlib.new(algorithm, data).digest()
    return f"{algorithm}={base64.urlsafe_b64encode(raw).rstrip(b'=').decode('ascii')}"


def _refused(message: str) -> HpclzError:
    return HpclzError(message, exit_code=ExitCode.USAGE)


def _ships(path: PurePosixPath, dist_info: str) -> bool:
    """Whether an installed file came from the wheel's purelib root (what a py3-none-any wheel holds)."""
    if path.is_absolute() or ".." in path.parts:
        return False  # console scripts in ../../bin are written by the installer, not taken from the wheel
    if "__pycache__" in path.parts or path.suffix == ".pyc":
        return False  # compiled at install time
    if path.parts[0] == dist_info:
        return len(path.parts) > 1 and not (len(path.parts) == 2 and path.name in INSTALLER_FILES)
    return not path.parts[0].endswith(".dist-info")


def verified_files(dist: metadata.Distribution) -> tuple[str, dict[str, bytes]]:
    """The installed dist's .dist-info name and its wheel files (posix path -> bytes), each checked against RECORD."""
    records = dist.files
    dist_infos = {PurePosixPath(str(r)).parts[0] for r in records or [] if PurePosixPath(str(r)).name == "RECORD"}
    if not records or len(dist_infos) != 1:
        raise _refused(f"the installed {DIST} has no RECORD to rebuild its wheel from; set HPCLZ_WHEEL")
    [dist_info] = dist_infos
    files: dict[str, bytes] = {}
    for record in records:
        path = PurePosixPath(str(record))
        if not _ships(path, dist_info):
            continue
        where = Path(str(dist.locate_file(record)))
        if record.hash is None:
            raise _refused(
                f"the installed {DIST}'s RECORD gives no hash for {path}; reinstall {DIST} or set HPCLZ_WHEEL"
            )
        if record.hash.mode not in ALLOWED_HASHES:
            raise _refused(
                f"the installed {DIST}'s RECORD hashes {path} with {record.hash.mode}, not sha256 or stronger"
            )
        try:
            data = where.read_bytes()
        except OSError:
            raise _refused(
                f"{where} is in the installed {DIST}'s RECORD but cannot be read; reinstall {DIST}"
            ) from None
        if record_digest(data, record.hash.mode) != f"{record.hash.mode}={record.hash.value}" or (
            record.size is not None and record.size != len(data)
        ):
            raise _refused(
                f"{where} differs from the installed {DIST}'s RECORD: a changed install is not deployed; "
                f"reinstall {DIST} or set HPCLZ_WHEEL"
            )
        files[str(path)] = data
    wheel_file = files.get(f"{dist_info}/WHEEL", b"").decode("utf-8", "replace").splitlines()
    if "Root-Is-Purelib: true" not in wheel_file or "Tag: py3-none-any" not in wheel_file:
        raise _refused(f"the installed {DIST} did not come from a py3-none-any wheel; set HPCLZ_WHEEL")
    return dist_info, files


def _member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    info.external_attr = FILE_MODE << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # Unix, whatever the platform writing it, so the bytes do not depend on it
    return info


def wheel_bytes(dist_info: str, files: dict[str, bytes]) -> bytes:
    """A deterministic wheel of these files: sorted, .dist-info last and RECORD last of all, as PEP 427 advises."""
    record_name = f"{dist_info}/RECORD"
    order = sorted(files, key=lambda name: (name.startswith(f"{dist_info}/"), name))
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    for name in order:
        writer.writerow([name, record_digest(files[name]), len(files[name])])
    writer.writerow([record_name, "", ""])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name in order:
            archive.writestr(_member(name), files[name], compresslevel=9)
        archive.writestr(_member(record_name), rows.getvalue().encode("utf-8"), compresslevel=9)
    return out.getvalue()


def repack_installed(out_dir: Path) -> Path:
    """Write the installed hpclz's wheel into out_dir and return its path."""
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        raise _refused(f"no installed {DIST} distribution to rebuild a wheel from; set HPCLZ_WHEEL") from None
    running = Path(__file__).resolve().parents[1] / "__init__.py"
    if Path(str(dist.locate_file(f"{DIST}/__init__.py"))).resolve() != running:
        raise _refused(f"the installed {DIST} distribution is not the {DIST} running from {running.parent}")
    dist_info, files = verified_files(dist)
    version = dist.version.replace("-", "_")
    path = out_dir / f"{DIST}-{version}-py3-none-any.whl"
    path.write_bytes(wheel_bytes(dist_info, files))
    return path
