"""The Hyper-V KVP pool the host shares with the VM: where Azure's physical host name is read inside the VM.

Layout: the Linux KVP daemon keeps each pool as a file of fixed records, `struct kvp_record { char
key[HV_KVP_EXCHANGE_MAX_KEY_SIZE]; char value[HV_KVP_EXCHANGE_MAX_VALUE_SIZE]; }` (torvalds/linux
tools/hv/hv_kvp_daemon.c, under KVP_CONFIG_LOC "/var/lib/hyperv"), with the sizes 512 and 2048 of
include/uapi/linux/hyperv.h; each string ends at its first NUL. Pool 3 holds the host's guest parameters, among them
`PhysicalHostName`, which aznhc's Guest Health Report sender reads (through kvp_client, getPhysHostName.py:9-20, and
sends as additionalProperties.PhysicalHostName, triggerGHR/triggerGHR.sh:250-254, 329, Azure/azurehpc-health-checks
@0e0a1ac), and which the Guest Health Report prefers over VmUniqueId (MicrosoftDocs/azure-compute-docs
articles/azure-impact-reporting/guest-health-impact-report.md @01f777c: "All HPC impact requests must include either
PhysicalHostName (preferred) or VmUniqueId"). Standard library only.
"""

from __future__ import annotations

KVP_POOL_3 = "/var/lib/hyperv/.kvp_pool_3"
KEY_SIZE = 512
VALUE_SIZE = 2048
RECORD_SIZE = KEY_SIZE + VALUE_SIZE
PHYSICAL_HOST_NAME = "PhysicalHostName"


def _string(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")


def parse_pool(data: bytes) -> dict[str, str]:
    """Key -> value for each whole record; a trailing partial record (a pool read while the daemon writes) is
    left out."""
    pool: dict[str, str] = {}
    for start in range(0, len(data) - RECORD_SIZE + 1, RECORD_SIZE):
        key = _string(data[start : start + KEY_SIZE])
        if key:
            pool[key] = _string(data[start + KEY_SIZE : start + RECORD_SIZE])
    return pool


def build_pool(pairs: dict[str, str]) -> bytes:
    """The file the daemon would write for `pairs` (tests and fixtures use it)."""
    return b"".join(k.encode().ljust(KEY_SIZE, b"\0") + v.encode().ljust(VALUE_SIZE, b"\0") for k, v in pairs.items())


def physical_host(data: bytes) -> str | None:
    return parse_pool(data).get(PHYSICAL_HOST_NAME) or None
