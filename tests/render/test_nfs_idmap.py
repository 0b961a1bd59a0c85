"""The NFSv4 ID domain on every node that mounts an Azure NetApp Files NFSv4.1 volume: `Domain =
defaultv4iddomain.com` in /etc/idmapd.conf, then `nfsidmap -c`, before the mount
(learn.microsoft.com/azure/azure-netapp-files/azure-netapp-files-configure-nfsv41-domain); without it owners show as
nobody. The rendered lines are run against idmapd.conf files as Debian's nfs-common ships them, and read back with
Python's own INI parser."""

from __future__ import annotations

import configparser
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.render.conftest import variant
from tests.render.test_cloudinit import _artifacts, _scripts

DOMAIN = "defaultv4iddomain.com"
# /etc/idmapd.conf as Debian 12's nfs-common 2.6.2 installs it (its Domain commented out).
DEBIAN = (
    "[General]\n\nVerbosity = 0\n# set your own domain here, if it differs from FQDN minus hostname\n"
    "# Domain = localdomain\n\n[Mapping]\n\nNobody-User = nobody\nNobody-Group = nogroup\n"
)
SET_ELSEWHERE = "[General]\nVerbosity = 0\nDomain = localdomain\n\n[Mapping]\nNobody-User = nobody\n"


def _idmap_part(script: str) -> str:
    [part] = re.findall(r"^idmapd=\$\{HPCLZ_IDMAPD_CONF.*?^nfsidmap -c \|\| true$", script, re.S | re.M)
    return "set -euo pipefail\n" + str(part) + "\n"


def _run(tmp_path: Path, script: str, conf: Path) -> list[str]:
    """Run the rendered lines against `conf`, with an nfsidmap that records its arguments; returns its calls."""
    calls = tmp_path / "nfsidmap.calls"
    stub = tmp_path / "bin" / "nfsidmap"
    stub.parent.mkdir(exist_ok=True)
    stub.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    stub.chmod(0o755)
    part = tmp_path / "idmap.sh"
    part.write_text(_idmap_part(script))
    env = {**os.environ, "HPCLZ_IDMAPD_CONF": str(conf), "PATH": f"{stub.parent}:{os.environ['PATH']}"}
    subprocess.run(["bash", str(part)], env=env, check=True, capture_output=True, text=True, timeout=60)
    return calls.read_text().splitlines()


def _domain(conf: Path) -> str:
    parser = configparser.ConfigParser()
    parser.read_string(conf.read_text())  # a repeated Domain key would raise DuplicateOptionError
    return parser["General"]["Domain"]


def _manufacturing_scripts() -> list[str]:
    return _scripts(_artifacts("manufacturing")["cyclecloud/slurm-cluster.txt"])


@pytest.mark.parametrize("before", [DEBIAN, SET_ELSEWHERE, None], ids=["debian", "other-domain", "no-file"])
def test_nodes_mounting_an_nfsv41_volume_set_anfs_id_domain(tmp_path: Path, before: str | None) -> None:
    script = _manufacturing_scripts()[0]
    conf = tmp_path / "idmapd.conf"
    if before is not None:
        conf.write_text(before)
    assert _run(tmp_path, script, conf) == ["-c"]  # the ID-mapping cache is cleared
    assert _domain(conf) == DOMAIN
    _run(tmp_path, script, conf)  # a rerun of the script (CycleCloud may rerun it) keeps one Domain line
    assert _domain(conf) == DOMAIN and re.findall(r"^Domain = .*$", conf.read_text(), re.M) == [f"Domain = {DOMAIN}"]
    if before == DEBIAN:
        assert "Nobody-Group = nogroup" in conf.read_text()  # the rest of the file is kept


def test_every_role_sets_the_domain_before_its_first_nfsv41_mount() -> None:
    scripts = _manufacturing_scripts()
    assert len(scripts) >= 3  # scheduler, login, and each partition
    for script in scripts:
        assert script.index("nfsidmap -c") < script.index("vers=4.1")


@pytest.mark.parametrize("stem", ["ai-training", "energy", "finance"])
def test_no_nfsv41_volume_no_id_domain(stem: str) -> None:
    for script in _scripts(_artifacts(stem)["cyclecloud/slurm-cluster.txt"]):
        assert "idmapd" not in script and "nfsidmap" not in script


def test_shared_home_on_netapp_over_nfsv41_sets_the_domain_on_every_role() -> None:
    """storage.shared on NetApp (CycleCloud mounts it) over NFSv4.1, with no NFSv4.1 volume of hpclz's own."""

    def edit(doc: dict[str, Any]) -> None:
        doc["storage"]["shared"]["protocol"] = "NFSv4.1"
        for volume in doc["storage"]["netapp"]["volumes"]:
            volume["protocol"] = "NFSv3"

    (compute,) = [d for d in variant("manufacturing", edit).deployments if d.component == "compute"]
    scripts = _scripts(compute.artifacts["cyclecloud/slurm-cluster.txt"])
    assert len(scripts) >= 3 and all("vers=4.1" not in s for s in scripts)  # no NFSv4.1 mount of hpclz's
    for script in scripts:
        assert _idmap_part(script).count("nfsidmap -c") == 1
