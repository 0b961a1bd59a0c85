"""hpclz-portal-users: the Open OnDemand portal gets the cluster's users with the cluster's UIDs and GIDs, read from
the homes CycleCloud keeps on the shared file system, through the real useradd/groupadd (shadow-utils, -P PREFIX so
only a scratch /etc changes). The cluster's user list here is the homes' owners, as on a cluster CycleCloud made."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require
from tests.render.conftest import preset_plan

HELPER = Path(__file__).resolve().parents[2] / "templates" / "cloud-init" / "portal_users.py"
PORTAL_PASSWD = "root:x:0:0:root:/root:/bin/bash\nubuntu:x:1000:1000::/home/ubuntu:/bin/bash\n"
PORTAL_GROUP = "root:x:0:\nusers:x:100:\nubuntu:x:1000:\n"


@pytest.fixture
def portal_etc(tmp_path: Path) -> Path:
    require(os.geteuid() == 0 and shutil.which("useradd") is not None, "root and shadow-utils' useradd (-P)")
    prefix = tmp_path / "portal"
    (prefix / "etc").mkdir(parents=True)
    (prefix / "etc" / "passwd").write_text(PORTAL_PASSWD)
    (prefix / "etc" / "group").write_text(PORTAL_GROUP)
    (prefix / "etc" / "shadow").write_text("root:*:20000:0:99999:7:::\nubuntu:*:20000:0:99999:7:::\n")
    (prefix / "etc" / "gshadow").write_text("root:*::\nusers:*::\nubuntu:!::\n")
    return prefix


def _home(base: Path, name: str, uid: int, gid: int) -> Path:
    path = base / name
    path.mkdir()
    os.chown(path, uid, gid)
    return path


def _accounts(prefix: Path) -> dict[str, tuple[int, int, str]]:
    out = {}
    for line in (prefix / "etc" / "passwd").read_text().splitlines():
        name, _, uid, gid, _, home, _ = line.split(":")
        out[name] = (int(uid), int(gid), home)
    return out


def _sync(home: Path, prefix: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HELPER), str(home), "--prefix", str(prefix)], capture_output=True, text=True, check=False
    )


def test_the_portal_gets_each_cluster_user_with_the_clusters_ids(tmp_path: Path, portal_etc: Path) -> None:
    home = tmp_path / "cluster-fs" / "home"
    home.mkdir(parents=True)
    cluster = {"alice": (20001, 20001), "bob": (20002, 100), "ubuntu": (1000, 1000)}
    for name, (uid, gid) in cluster.items():
        _home(home, name, uid, gid)
    _home(home, "carol", 1000, 1000)  # her UID is the portal's own ubuntu: refused, reported
    _home(home, "munge", 11101, 11101)  # cyclecloud-slurm's service account: the boot script's, not a user
    _home(home, "lost+found", 20009, 20009)  # no user's name: a file system's own folder
    (home / "link").symlink_to(home / "alice")

    first = _sync(home, portal_etc)
    assert first.returncode == 1, first.stdout + first.stderr  # carol's conflict
    accounts = _accounts(portal_etc)
    for name, (uid, gid) in cluster.items():  # every cluster user, with exactly the cluster's UID and GID
        assert accounts[name][:2] == (uid, gid), name
        assert (home / name).stat().st_uid == accounts[name][0]
    assert accounts["alice"][2] == str(home / "alice")
    assert not {"carol", "munge", "lost+found", "link"} & set(accounts)
    assert "not creating carol (uid 1000, gid 1000): uid 1000 is already ubuntu here" in first.stdout
    assert "alice:x:20001:" in (portal_etc / "etc" / "group").read_text()  # her own group, by the home's GID
    assert (portal_etc / "etc" / "group").read_text().count("bob") == 0  # bob's GID 100 is the portal's `users`

    second = _sync(home, portal_etc)  # the timer's next run changes nothing
    assert _accounts(portal_etc) == accounts
    assert "created" not in second.stdout


def test_nothing_happens_before_the_share_is_mounted(tmp_path: Path, portal_etc: Path) -> None:
    result = _sync(tmp_path / "absent", portal_etc)
    assert result.returncode == 1 and "is not mounted yet" in result.stdout
    assert (portal_etc / "etc" / "passwd").read_text() == PORTAL_PASSWD


def test_the_portal_script_installs_the_sync_on_the_shared_home() -> None:
    (portal,) = [d for d in preset_plan("ai-training").deployments if d.component == "portal"]
    script = portal.artifacts["cloud-init/portal.sh"]
    assert HELPER.read_text() in script
    assert "ExecStart=/opt/hpclz/bin/hpclz-portal-users /shared/home" in script
    assert "systemctl enable --now hpclz-portal-users.timer" in script


def test_first_last_and_capitalised_users_get_the_lower_case_name_open_ondemand_maps_them_to(
    tmp_path: Path, portal_etc: Path
) -> None:
    """A UPN's user part may hold dots and capitals (`john.smith@`, `John.Smith@`), and CycleCloud names a user's home
    after the Entra ID user. The portal account is the home's name in lower case, the name Open OnDemand's
    user_map_match (`:lower`) gives the same UPN (tests/render/test_portal.py runs that map in Lua), with the home's
    UID, GID and path. Two homes differing only in case cannot both be one portal account: the second is reported."""
    home = tmp_path / "cluster-fs" / "home"
    home.mkdir(parents=True)
    _home(home, "jane.doe", 20003, 20003)
    _home(home, "John.Smith", 20004, 20004)
    _home(home, "MARY_ANN-2", 20005, 20005)
    _home(home, "john.smith", 20006, 20006)  # after John.Smith in name order: the same portal name, another UID

    result = _sync(home, portal_etc)
    assert result.returncode == 1, result.stdout + result.stderr
    accounts = _accounts(portal_etc)
    assert accounts["jane.doe"] == (20003, 20003, str(home / "jane.doe"))
    assert accounts["john.smith"] == (20004, 20004, str(home / "John.Smith"))
    assert accounts["mary_ann-2"] == (20005, 20005, str(home / "MARY_ANN-2"))
    assert not {"John.Smith", "MARY_ANN-2"} & set(accounts)
    assert "not creating john.smith (uid 20006, gid 20006): john.smith exists here as uid 20004" in result.stdout
    assert "john.smith:x:20004:" in (portal_etc / "etc" / "group").read_text()
    again = _sync(home, portal_etc)  # the next run: John.Smith's account is there, and stays as it is
    assert _accounts(portal_etc) == accounts and "created" not in again.stdout
