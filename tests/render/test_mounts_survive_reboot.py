"""Mounts the node cloud-init makes come back after a reboot: CycleCloud runs a node's CloudInit script once per VM,
so the shared file systems go to /etc/fstab (read here by systemd's own fstab generator, as at boot) and the NVMe
scratch array is a service that runs at every boot."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require
from tests.render.test_cloudinit import _artifacts, _nodearrays, _scripts

GENERATOR = Path("/lib/systemd/system-generators/systemd-fstab-generator")
# The presets' shared mounts: Lustre in ai-training and energy, two NetApp volumes in manufacturing.
MOUNTS = {
    "ai-training": {"/lustre": "lustre"},
    "energy": {"/lustre": "lustre"},
    "manufacturing": {"/anf/apps": "nfs", "/anf/results": "nfs"},
}
OTHER = "UUID=1234 / ext4 defaults 0 1\n# {point} a comment\n"


def _fstab_part(script: str) -> str:
    """The script's hpclz_fstab function and its calls, with the address ARM would answer."""
    [function] = re.findall(r"^hpclz_fstab\(\) \{\n.*?^\}\n", script, re.S | re.M)
    calls = re.findall(r"^ +hpclz_fstab .*$", script, re.M)
    assert calls
    return "set -euo pipefail\naddr=10.0.0.4\n" + str(function) + "\n".join(c.strip() for c in calls) + "\n"


def _apply(tmp_path: Path, script: str, fstab: Path) -> None:
    part = tmp_path / "fstab.sh"
    part.write_text(_fstab_part(script))
    env = {**os.environ, "HPCLZ_FSTAB": str(fstab)}
    subprocess.run(["bash", str(part)], env=env, check=True, capture_output=True, text=True, timeout=60)


def _units(stem: str) -> list[str]:
    """Every role's script: scheduler, login nodes, each nodearray."""
    scripts = _scripts(_artifacts(stem)["cyclecloud/slurm-cluster.txt"])
    assert any("hpclz on the Slurm scheduler node" in s for s in scripts)
    assert any("hpclz on the Slurm login nodes" in s for s in scripts)
    return scripts


@pytest.mark.parametrize("stem", sorted(MOUNTS))
def test_every_role_writes_its_shared_mounts_to_fstab_once(stem: str, tmp_path: Path) -> None:
    """Run twice (CycleCloud may rerun a node's script): one line per mount point, an earlier one for the same mount
    point replaced, other lines and comments kept."""
    scripts = [s for s in _units(stem) if "hpclz_fstab" in s]
    assert len(scripts) == len(_units(stem))
    for index, script in enumerate(scripts):
        fstab = tmp_path / f"fstab{index}"
        first = next(iter(MOUNTS[stem]))
        fstab.write_text(OTHER.format(point=first) + f"old:/x {first} nfs defaults 0 0\n")
        _apply(tmp_path, script, fstab)
        _apply(tmp_path, script, fstab)
        lines = fstab.read_text().splitlines()
        assert lines[:2] == OTHER.format(point=first).splitlines()
        entries = {line.split()[1]: line.split() for line in lines[2:]}
        assert len(entries) == len(lines) - 2 == len(MOUNTS[stem])
        for point, kind in MOUNTS[stem].items():
            device, _, fstype, options, *_ = entries[point]
            assert (device.startswith("10.0.0.4"), fstype) == (True, kind)
            assert options.split(",")[-2:] == ["_netdev", "nofail"]


@pytest.mark.parametrize("stem", sorted(MOUNTS))
def test_systemd_mounts_the_fstab_lines_at_boot_as_network_mounts_that_never_block_it(
    stem: str, tmp_path: Path
) -> None:
    """systemd-fstab-generator, run on the written fstab as at boot: each shared mount becomes a mount unit wanted (not
    required, `nofail`) by remote-fs.target (`_netdev`), so it is mounted again at every boot after the network."""
    require(GENERATOR.is_file(), "systemd-fstab-generator")
    fstab = tmp_path / "fstab"
    fstab.write_text("")
    _apply(tmp_path, _units(stem)[0], fstab)
    out = tmp_path / "generated"
    out.mkdir()
    env = {**os.environ, "SYSTEMD_FSTAB": str(fstab), "SYSTEMD_PROC_CMDLINE": "", "SYSTEMD_LOG_LEVEL": "debug"}
    done = subprocess.run(
        [str(GENERATOR), str(out), str(out), str(out)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    for point, kind in MOUNTS[stem].items():
        unit = point.strip("/").replace("/", "-") + ".mount"
        text = (out / unit).read_text()
        assert f"Where={point}\n" in text and f"Type={kind}\n" in text and "What=10.0.0.4" in text, text
        assert (out / "remote-fs.target.wants" / unit).is_symlink(), sorted(p.name for p in out.rglob("*"))
        assert not (out / "remote-fs.target.requires" / unit).exists()
        assert not (out / "local-fs.target.wants" / unit).exists()


def _nvme(stem: str, array: str) -> tuple[str, str, str]:
    script = _scripts(_nodearrays(_artifacts(stem)["cyclecloud/slurm-cluster.txt"])[array])[0]
    [program] = re.findall(
        r"cat > /opt/hpclz/bin/hpclz-nvme-scratch <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", script, re.S | re.M
    )
    [unit] = re.findall(
        r"cat > /etc/systemd/system/hpclz-nvme-scratch.service <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", script, re.S | re.M
    )
    return script, program, unit


@pytest.mark.parametrize(("stem", "array"), [("ai-training", "h100"), ("energy", "hbv3")])
def test_the_nvme_scratch_array_is_a_service_run_at_every_boot(stem: str, array: str, tmp_path: Path) -> None:
    """As azhpc-images' nvme-raid.service (customizations/setup_nvme.sh @10e5348): a oneshot unit wanted by
    multi-user.target. It mounts the array again after a reboot (assembled from its disks first) and stripes blank
    disks only where no labelled file system is found (a VM started after deallocation); /nvme is bound each boot."""
    script, program, unit = _nvme(stem, array)
    assert "Type=oneshot\nRemainAfterExit=yes\nExecStart=/opt/hpclz/bin/hpclz-nvme-scratch\n" in unit
    assert "WantedBy=multi-user.target" in unit and "Before=slurmd.service" in unit
    assert "systemctl enable hpclz-nvme-scratch.service\nsystemctl start hpclz-nvme-scratch.service\n" in script
    assert "mdadm --create" not in script.replace(program, "")  # only the boot service builds the array
    assemble, mount_again, create = (
        program.index("mdadm --assemble --scan"),
        program.index('mount -o noatime "/dev/disk/by-label/$LABEL"'),
        program.index("mdadm --create /dev/md/hpclz-scratch"),
    )
    assert assemble < mount_again < create
    assert 'mkfs.xfs -f -L "$LABEL"' in program and 'mkfs.ext4 -F -L "$LABEL"' in program
    assert re.search(r"^LABEL=(\S+)", program, re.M).group(1).__len__() <= 12  # type: ignore[union-attr]
    assert "NVME_BIND=${HPCLZ_NVME_BIND:-/nvme}\n" in program and 'mount --bind "$NVME_MOUNT" "$NVME_BIND"' in program
    path = tmp_path / "hpclz-nvme-scratch"
    path.write_text(program)
    subprocess.run(["bash", "-n", str(path)], check=True, timeout=60)


@pytest.mark.parametrize(("stem", "array"), [("ai-training", "h100"), ("energy", "hbv3")])
def test_the_nvme_scratch_folder_is_made_again_on_a_new_array(stem: str, array: str) -> None:
    """storage.scratch on NVMe: after a deallocation the array's file system is new, so the service makes again the
    folder that the /scratch link points at."""
    script, program, _ = _nvme(stem, array)
    [folder] = re.findall(r"^  mkdir -p (\S+/scratch)$", program, re.M)
    assert f"ln -s {folder} /scratch" in script


# /etc/enroot/enroot.conf as cyclecloud-slurm writes it: its templates/enroot.conf.template with ENROOT_SCRATCH_DIR
# set (Azure/cyclecloud-slurm@50e673900227073883c5d74828863be4435bdb9a:azure-slurm-install/install.py:947,958-967).
ENROOT_CONF = """ENROOT_SCRATCH_PATH {d}
ENROOT_RUNTIME_PATH {d}/enroot-run/user-$(id -u)
ENROOT_CACHE_PATH {d}/enroot-cache/group-$(id -g)
ENROOT_DATA_PATH {d}/enroot-data/user-$(id -u)
ENROOT_TEMP_PATH {d}/enroot-temp
ENROOT_SQUASH_OPTIONS -noI -noD -noF -noX -no-duplicates
MELLANOX_VISIBLE_DEVICES all
"""
# The folders install.py makes and their modes, all root:root (install.py:950,953-956).
ENROOT_DIRS = {
    "enroot": 0o755,
    **{
        f"enroot/{sub}": 0o777 for sub in ("enroot-cache", "enroot-data", "enroot-temp", "enroot-runtime", "enroot-run")
    },
}


def _boot(tmp_path: Path, program: str, scratch_dir: str | None) -> Path:
    """Run the service's program as at a boot after deallocation: the array is new and empty and mounted on
    /nvme (stand-in mountpoint; mdadm, udevadm and mount must not be reached), and the node's enroot.conf and
    pyxis.conf are install.py's, naming `scratch_dir` (none when None)."""
    nvme, etc, bin_ = tmp_path / "nvme", tmp_path / "etc", tmp_path / "bin"
    for folder in (nvme, etc, bin_):
        folder.mkdir(exist_ok=True)
    (bin_ / "mountpoint").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("mdadm", "udevadm", "mount", "mkfs.xfs", "mkfs.ext4"):
        (bin_ / tool).write_text(f"#!/bin/sh\necho {tool} reached >&2\nexit 1\n")
    for stand_in in bin_.iterdir():
        stand_in.chmod(0o755)
    if scratch_dir is not None:
        (etc / "enroot.conf").write_text(ENROOT_CONF.format(d=scratch_dir))
        # install.py:991: the plugstack line pyxis reads its runtime_path from.
        (etc / "pyxis.conf").write_text(f"required /opt/pyxis/spank_pyxis.so runtime_path={scratch_dir}/enroot-runtime")
    path = tmp_path / "hpclz-nvme-scratch"
    path.write_text(program)
    env = {
        "PATH": f"{bin_}:/usr/bin:/bin",
        "HPCLZ_NVME_BIND": str(nvme),
        "HPCLZ_ENROOT_CONF": str(etc / "enroot.conf"),
        "HPCLZ_PYXIS_CONF": str(etc / "pyxis.conf"),
    }
    done = subprocess.run(["bash", str(path)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "reached" not in done.stderr, done.stderr
    return nvme


def _tree(nvme: Path) -> dict[str, tuple[int, int, int]]:
    return {
        str(p.relative_to(nvme)): (p.stat().st_mode & 0o7777, p.stat().st_uid, p.stat().st_gid)
        for p in sorted(nvme.rglob("*"))
    }


@pytest.mark.parametrize(("stem", "array"), [("ai-training", "h100"), ("energy", "hbv3")])
def test_enroot_folders_on_nvme_come_back_on_a_new_array_before_slurmd(stem: str, array: str, tmp_path: Path) -> None:
    """After a deallocation the array is blank, and install.py (a cluster-init script) does not run again: the
    boot service, a oneshot ordered before slurmd.service, makes again the folders enroot.conf and pyxis.conf name
    on /nvme with install.py's modes, so pyxis's slurmd init finds runtime_path's parent and no user's job makes them
    under umask 077 first. A second boot changes nothing; a folder a job made 700 gets install.py's mode back."""
    require(os.geteuid() == 0, "root (the service chowns to root:root)")
    _, program, unit = _nvme(stem, array)
    assert "Type=oneshot" in unit and "Before=slurmd.service" in unit
    nvme = tmp_path / "nvme"
    nvme.mkdir()
    nvme.chmod(0o1777)
    _boot(tmp_path, program, f"{nvme}/enroot")
    want = {name: (mode, 0, 0) for name, mode in ENROOT_DIRS.items()}
    assert _tree(nvme) == want
    (nvme / "enroot/enroot-cache").chmod(0o700)
    os.chown(nvme / "enroot/enroot-cache", 65534, 65534)
    _boot(tmp_path, program, f"{nvme}/enroot")
    assert _tree(nvme) == want


@pytest.mark.parametrize("scratch_dir", [None, "/mnt/enroot", "/tmp/enroot"])
def test_no_enroot_folder_is_made_where_cyclecloud_slurm_did_not_choose_nvme(
    scratch_dir: str | None, tmp_path: Path
) -> None:
    """cyclecloud-slurm chooses /mnt or /tmp when /nvme was not a mount point (install.py:934-943), or wrote no
    enroot.conf (an OS it skips, install.py:930-932): the service invents nothing on the array."""
    _, program, _ = _nvme("ai-training", "h100")
    nvme = _boot(tmp_path, program, scratch_dir)
    assert _tree(nvme) == {}


def test_a_link_or_a_path_out_of_nvme_in_enroot_conf_is_left_alone(tmp_path: Path) -> None:
    """enroot.conf is owned by the slurm user (install.py:958-962): a path that climbs out of /nvme, or a folder
    that is a symbolic link, is not created or changed by the root service."""
    _, program, _ = _nvme("ai-training", "h100")
    nvme = tmp_path / "nvme"
    nvme.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o700)
    (nvme / "enroot").symlink_to(outside)
    _boot(tmp_path, program, f"{nvme}/../outside/enroot")
    _boot(tmp_path, program, f"{nvme}/enroot")
    assert outside.stat().st_mode & 0o777 == 0o700 and list(outside.iterdir()) == []
