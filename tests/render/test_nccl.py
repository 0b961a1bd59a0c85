"""enroot's system-wide NCCL files on the partitions whose size the Azure HPC image customizes (hpclz.render.nccl).

The files are read here as enroot 4.0.1 (the release cyclecloud-slurm 4.0.9 installs, Azure/cyclecloud-slurm@50e6739
azure-slurm-install/ubuntu.sh:152-153) reads them, its rules copied with their lines:
- environ.d/*.env: the lines are appended to the container's environment file (src/runtime.sh l.32-62), which
  common::envfmt filters (src/common.sh l.190-204: leading blanks dropped, comments and empty lines dropped, a line
  not `NAME=` dropped, ENROOT_* dropped, surrounding quotes removed) and load_environment sets in order with
  overwrite (bin/common.h l.148-179), after envvar_valid.
- mounts.d/*.fstab: read with getmntent (bin/enroot-mount.c mount_fstab l.564-620): blank-separated fields
  `fsname dir type opts freq passno`; every option either one enroot-mount knows (its table, l.54-113) or passed
  on to mount(2) as file-system data, which a bind mount would not honour, so every option here must be in the table.
What is not run here: enroot itself (no enroot or user namespaces on this machine) and NCCL on a GPU node reading
NCCL_TOPO_FILE inside a container; docs/verify-workload.md says how to check both on a cluster.
"""

from __future__ import annotations

import re
import subprocess
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

from hpclz.catalog import load_catalog
from hpclz.render.nccl import ENVIRON_FILE, FAMILIES, MOUNTS_FILE, container_files, image_nccl
from tests.render.conftest import preset_plan, variant

# NVIDIA/enroot@v4.0.1 bin/enroot-mount.c l.54-113, the option names of its mount_opts table.
ENROOT_MOUNT_OPTIONS = frozenset(
    [
        "async",
        "atime",
        "bind",
        "dev",
        "diratime",
        "dirsync",
        "exec",
        "iversion",
        "loud",
        "mand",
        "noatime",
        "nodev",
        "nodiratime",
        "noexec",
        "noiversion",
        "nomand",
        "norelatime",
        "nostrictatime",
        "nosuid",
        "private",
        "rbind",
        "relatime",
        "remount",
        "ro",
        "rprivate",
        "rshared",
        "rslave",
        "runbindable",
        "rw",
        "shared",
        "silent",
        "slave",
        "strictatime",
        "suid",
        "sync",
        "unbindable",
        "lazytime",
        "nolazytime",
        "auto",
        "defaults",
        "group",
        "noauto",
        "nofail",
        "nogroup",
        "noowner",
        "nouser",
        "nousers",
        "owner",
        "user",
        "users",
        "x-create=dir",
        "x-create=file",
        "x-create=auto",
        "x-move",
        "x-detach",
    ]
)
# setup_sku_customizations.sh l.31-34 (Azure/azhpc-images@8e9d055f): the families whose script writes no nccl.conf.
LEFT_OUT = ("standard_hb176*v4", "standard_nc80adis_h100_v5", "standard_nd128is*_gb[2-3]00_v6")

HPC_IMAGE = "microsoft-dsvm:ubuntu-hpc:2204:22.04.2026082801"
NDV5 = {
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_TOPO_FILE": "/opt/microsoft/ndv5/topo.xml",
    "NCCL_IGNORE_CPU_AFFINITY": "1",
}


def enroot_environ(*texts: str) -> dict[str, str]:
    """The environment enroot-switchroot sets from these files, concatenated in order (common::envfmt, then
    load_environment: a later line overwrites an earlier one)."""
    env: dict[str, str] = {}
    for raw in "".join(texts).splitlines():
        line = re.sub(r"^\s+", "", raw)
        if not line or line.startswith("#") or not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", line):
            continue
        if line.startswith("ENROOT_"):
            continue
        line = re.sub(r"^([A-Za-z_][A-Za-z0-9_]*)=[\"'](.*)[\"']\s*$", r"\1=\2", line)
        name, _, value = line.partition("=")
        env[name] = value
    return env


def enroot_mounts(text: str) -> list[tuple[str, str, str, list[str], int]]:
    """(source, target, type, options, passno) per entry, as getmntent splits them; an option enroot-mount does not
    know fails the test."""
    entries = []
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        source, target, type_, opts, _freq, passno = raw.split()
        options = opts.split(",")
        unknown = [o for o in options if o not in ENROOT_MOUNT_OPTIONS]
        assert not unknown, f"enroot-mount would pass {unknown} to mount(2) as data: {raw}"
        entries.append((source, target, type_, options, int(passno)))
    return entries


def _node_script(stem: str, partition: str) -> str:
    (compute,) = [d for d in preset_plan(stem).deployments if d.component == "compute"]
    scripts: list[str] = re.findall(
        r"CloudInit = '''(.*?)'''", compute.artifacts["cyclecloud/slurm-cluster.txt"], flags=re.S
    )
    (script,) = [
        s for s in scripts if s.startswith(f"#!/bin/bash\n# hpclz node setup for Slurm partition {partition} ")
    ]
    return script


def _written(script: str, root: Path) -> dict[str, str]:
    """Run the script's enroot block with /etc/enroot moved under `root`; the files it leaves, by their node path."""
    start = script.find("mkdir -p /etc/enroot/environ.d")
    if start < 0:
        return {}
    # The block runs up to the script's last line, which with shared mounts first names any that are missing.
    ends = [script.find(marker, start) for marker in ('\nif [ -n "${unmounted:-}" ]', '\necho "hpclz node setup done')]
    end = min(e for e in ends if e >= 0)
    block = script[start:end].replace("/etc/enroot/", f"{root}/etc/enroot/")
    subprocess.run(["bash", "-euo", "pipefail", "-c", block], check=True)
    return {"/" + str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("stem", "partition"), [("ai-training", "h100"), ("ai-training", "h200"), ("energy", "gpu")])
def test_h100_and_h200_containers_get_the_images_nccl_settings_and_topology(
    stem: str, partition: str, tmp_path: Path
) -> None:
    files = _written(_node_script(stem, partition), tmp_path)
    assert set(files) == {ENVIRON_FILE, MOUNTS_FILE}
    # What /etc/nccl.conf holds on the host (customizations/ndv5.sh l.11-15), as the container's environment; an
    # image that sets none of them (the empty /etc/environment) keeps them.
    assert enroot_environ("", files[ENVIRON_FILE]) == NDV5
    assert enroot_mounts(files[MOUNTS_FILE]) == [
        (
            "/opt/microsoft",
            "/opt/microsoft",
            "none",
            ["x-create=dir", "bind", "ro", "nosuid", "nodev", "noexec", "private", "nofail"],
            -1,
        )
    ]


@pytest.mark.parametrize(
    ("stem", "partition"),
    [
        ("ai-training", "gb300"),  # ndv6.sh writes no nccl.conf and links no topology file
        ("energy", "hbv4"),
        ("energy", "hbv3"),
        ("finance", "hx"),
        ("finance", "montecarlo"),
        ("manufacturing", "cfd"),
        ("manufacturing", "crash"),
    ],
)
def test_gb300_and_cpu_partitions_get_no_enroot_files(stem: str, partition: str, tmp_path: Path) -> None:
    # No NCCL file; the job credential's mount file (hpclz.render.job_storage) is any partition's, NCCL or not.
    script = _node_script(stem, partition)
    assert "/etc/enroot/environ.d" not in script and ENVIRON_FILE not in script and MOUNTS_FILE not in script
    assert _written(script, tmp_path) == {}


def test_a_users_own_values_win_over_the_system_files() -> None:
    """enroot's order (src/runtime.sh l.40-58): image /etc/environment, /etc/enroot/environ.d, the user's
    environ.d, then `--env` (pyxis's --container-env): the user's lines come later and win."""
    system = container_files("Standard_ND96isr_H100_v5", HPC_IMAGE)[ENVIRON_FILE]
    image = "NCCL_TOPO_FILE=/image/topo.xml\nNCCL_DEBUG=WARN\n"
    user = "NCCL_TOPO_FILE=/home/me/topo.xml\n"
    assert enroot_environ(image, system)["NCCL_TOPO_FILE"] == NDV5["NCCL_TOPO_FILE"]
    assert enroot_environ(image, system)["NCCL_DEBUG"] == "WARN"
    assert enroot_environ(image, system, user)["NCCL_TOPO_FILE"] == "/home/me/topo.xml"


@pytest.mark.parametrize(
    ("size", "family"),
    [
        ("Standard_ND96isr_H100_v5", "ndv5"),
        ("Standard_ND96isr_H200_v5", "ndv5"),
        ("Standard_ND96asr_v4", "ndv4"),
        ("Standard_ND96amsr_A100_v4", "ndv4"),
        ("Standard_NC96ads_A100_v4", "ncv4"),
        ("Standard_ND40rs_v2", "ndv2"),
        ("Standard_NC128ds_xl_RTXPRO6000BSE_v6", "ncv6"),  # a name of the shape the pattern takes
        ("Standard_ND128isr_GB300_v6", None),
        ("Standard_ND128isr_NDR_GB200_v6", None),
        ("Standard_NC80adis_H100_v5", None),
        ("Standard_NC24ads_A100_v4", None),
        ("Standard_HB176rs_v4", None),
        ("Standard_F72s_v2", None),
    ],
)
def test_sizes_map_to_the_images_families(size: str, family: str | None) -> None:
    found = image_nccl(size)
    assert (found.family if found else None) == family


def test_no_catalog_size_is_in_a_family_left_out_and_one_kept() -> None:
    """image_nccl drops the families without NCCL settings from the script's first-match case: that is only the
    same answer while no size matches both."""
    sizes = [s.lower() for s in load_catalog().skus]
    assert sizes
    for size in sizes:
        left_out = any(fnmatchcase(size, p) for p in LEFT_OUT)
        kept = any(fnmatchcase(size, p) for f in FAMILIES for p in f.patterns)
        assert not (left_out and kept), size


def test_a_family_without_topology_files_mounts_nothing() -> None:
    files = container_files("Standard_NC128ds_xl_RTXPRO6000BSE_v6", HPC_IMAGE)
    assert set(files) == {ENVIRON_FILE}
    assert enroot_environ(files[ENVIRON_FILE]) == {"NCCL_SOCKET_IFNAME": "eth0"}  # customizations/ncv6.sh l.11-13


def test_a_node_not_booting_an_azure_hpc_image_gets_nothing(tmp_path: Path) -> None:
    """A gallery image is not known to run the image's sku-customizations, so NCCL_TOPO_FILE would name nothing."""
    gallery = (
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/"
        "galleries/g/images/hpc/versions/1.0.0"
    )

    def edit(data: dict[str, Any]) -> None:
        (h100,) = [p for p in data["compute"]["partitions"] if p["name"] == "h100"]
        h100["image"] = gallery

    (compute,) = [d for d in variant("ai-training", edit).deployments if d.component == "compute"]
    scripts: list[str] = re.findall(
        r"CloudInit = '''(.*?)'''", compute.artifacts["cyclecloud/slurm-cluster.txt"], flags=re.S
    )
    (h100,) = [s for s in scripts if s.startswith("#!/bin/bash\n# hpclz node setup for Slurm partition h100 ")]
    assert "/etc/enroot/environ.d" not in h100
    assert container_files("Standard_ND96isr_H100_v5", gallery) == {}
    assert container_files("Standard_ND96isr_H100_v5", "almalinux:almalinux-hpc:8_10-hpc-gen2:latest")
    assert container_files("Standard_ND96isr_H100_v5", "canonical:ubuntu-24_04-lts:server:latest") == {}


def test_enroots_own_envfmt_keeps_every_line_of_the_environ_file(tmp_path: Path) -> None:
    """The rendered file through enroot's own filter, its sed expressions copied from common::envfmt
    (NVIDIA/enroot@v4.0.1 src/common.sh l.198-203): the variables all survive, the comment does not."""
    env = tmp_path / "environment"
    env.write_text(container_files("Standard_ND96isr_H200_v5", HPC_IMAGE)[ENVIRON_FILE], encoding="utf-8")
    sed = [
        "sed",
        "-i",
        "-e",
        r"s/^[[:space:]]\+//",
        "-e",
        r"/^#\|^$/d",
        "-e",
        r"/^[[:alpha:]_][[:alnum:]_]*=/!d",
        "-e",
        r"/^ENROOT_/d",
        "-e",
        r"s/^\([[:alpha:]_][[:alnum:]_]*\)=[\"\x27]\(.*\)[\"\x27][[:space:]]*$/\1=\2/",
        str(env),
    ]
    subprocess.run(sed, check=True)
    assert env.read_text(encoding="utf-8").splitlines() == [f"{k}={v}" for k, v in NDV5.items()]
