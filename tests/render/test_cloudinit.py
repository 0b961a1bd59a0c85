"""The CycleCloud server's cloud-init, the Slurm cluster it imports, and the node scripts inside it."""

from __future__ import annotations

import ast
import base64
import gzip
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from hpclz.errors import HpclzError
from hpclz.render.cloudinit import CUSTOM_DATA_LIMIT, USER_DATA_LIMIT, custom_data, user_data
from hpclz.render.server_programs import SERVER_PROGRAMS
from hpclz.render.shipped import shipped_template
from hpclz.slurm.route import SCHEDULER_PYTHON
from tests.conftest import require
from tests.render.conftest import cyclecloud_vms, preset_plan, variant

TEMPLATES = Path(__file__).resolve().parents[2] / "templates" / "cloud-init"


def _artifacts(stem: str) -> dict[str, str]:
    (compute,) = [d for d in preset_plan(stem).deployments if d.component == "compute"]
    return compute.artifacts


def _unpacked(encoded: str) -> str:
    """customData as the VM reads it: base64 around gzip, always (cloud-init gunzips "content found to be gzip
    compressed": cloudinit.readthedocs.io/en/stable/explanation/format.html). Unpacked here with the standard library,
    not hpclz.render.payload, so a payload that went out plain fails."""
    raw = base64.b64decode(encoded, validate=True)
    assert raw[:2] == b"\x1f\x8b", "customData went out without gzip"
    return gzip.decompress(raw).decode()


def _unpacked_xz(encoded: str) -> str:
    """The CycleCloud server's userData as hpclz-cluster-sync reads it: base64 around xz, always (hpclz.render.payload
    says why xz). Standard library again, so a plain or gzip payload fails."""
    raw = base64.b64decode(encoded, validate=True)
    assert raw[:6] == b"\xfd7zXZ\x00", "userData went out without xz"
    return lzma.decompress(raw).decode()


def _cloud_config(stem: str) -> dict[str, Any]:
    (vm,) = cyclecloud_vms(preset_plan(stem))
    text = _unpacked(vm["properties"]["osProfile"]["customData"])
    assert text == _artifacts(stem)["cloud-init/cyclecloud-server.yaml"]
    assert text.startswith("#cloud-config\n")
    return dict(YAML(typ="safe").load(text))


def _nodearrays(cluster: str) -> dict[str, str]:
    """nodearray name -> its section text."""
    parts = re.split(r"^    \[\[nodearray ([^\]]+)\]\]$", cluster, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _scripts(cluster: str) -> list[str]:
    return re.findall(r"CloudInit = '''(.*?)'''", cluster, flags=re.S)


def _node_scripts(cluster: str) -> list[str]:
    """The partitions' scripts, without the scheduler's and the login nodes'."""
    return [s for s in _scripts(cluster) if "hpclz node setup for Slurm partition" in s]


def _user_data(stem: str) -> dict[str, Any]:
    (vm,) = cyclecloud_vms(preset_plan(stem))
    text = _unpacked_xz(vm["properties"]["userData"])
    assert text == _artifacts(stem)["cloud-init/cyclecloud-userdata.json"]
    return dict(json.loads(text))


def test_custom_data_installs_cyclecloud_and_the_sync_service_only(preset_path: Path) -> None:
    config = _cloud_config(preset_path.stem)
    files = {f["path"]: f["content"] for f in config["write_files"]}
    assert config["runcmd"] == [["/opt/hpclz/bin/bootstrap-cyclecloud"]]
    bootstrap = files["/opt/hpclz/bin/bootstrap-cyclecloud"]
    # Microsoft's image brings CycleCloud: no package manager, no release fetched at boot, the CLI from the image's
    # zip only where the image lacks it (Azure/cyclecloud-slurm-workspace@bc0fc1b:
    # bicep/files-to-load/cyclecloud_install.py:409-430).
    assert "test -x /opt/cycle_server/cycle_server" in bootstrap
    assert "if [ ! -x /usr/local/bin/cyclecloud ]; then" in bootstrap and "./install.sh --system" in bootstrap
    assert not re.search(r"\b(dnf|yum|apt|apt-get|pip3?) install\b", bootstrap)
    assert "github.com" not in bootstrap and "project fetch" not in bootstrap
    assert "webServerMaxHeapSize=8192M" in bootstrap
    assert "systemctl start hpclz-cluster-sync.service" in bootstrap
    assert "systemctl enable --now hpclz-cluster-sync.timer" in bootstrap
    # hpclz's own programs are not here: hpclz-server-programs installs them from the hpclz wheel in the locker, and
    # again from each newer wheel (test_server_programs.py), so a newer hpclz never changes customData.
    assert files["/opt/hpclz/bin/hpclz-server-programs"] == (TEMPLATES / "server_programs.py").read_text(
        encoding="utf-8"
    )
    assert "/opt/hpclz/bin/hpclz-cluster-sync" not in files and "/opt/hpclz/bin/hpclz-cc-users" not in files
    assert "/usr/bin/python3 /opt/hpclz/bin/hpclz-server-programs --first-boot" in bootstrap
    assert "OnUnitInactiveSec=" in files["/etc/systemd/system/hpclz-cluster-sync.timer"]
    # Nothing that follows a partition edit may be here: customData cannot change after the VM exists.
    text = _artifacts(preset_path.stem)["cloud-init/cyclecloud-server.yaml"]
    # (MachineType = is the template's attribute; cluster-sync's wait names the Azure.MachineType records.)
    assert "[[nodearray" not in text and "MachineType = " not in text and "import_cluster" not in bootstrap


def test_a_server_without_cyclecloud_identity_keeps_its_programs_in_custom_data() -> None:
    """Without CycleCloud's identity the server cannot read the locker, so the wheel cannot bring the programs."""

    def without(data: dict[str, Any]) -> None:
        data.setdefault("identity", {}).setdefault("managed_identities", {})["scheduler"] = False

    (server,) = cyclecloud_vms(variant("finance", without))
    text = _unpacked(server["properties"]["osProfile"]["customData"])
    files = {f["path"]: f["content"] for f in YAML(typ="safe").load(text)["write_files"]}
    assert files["/opt/hpclz/bin/hpclz-cluster-sync"] == (TEMPLATES / "cluster_sync.py").read_text(encoding="utf-8")
    assert files["/opt/hpclz/bin/hpclz-cc-users"] == (TEMPLATES / "cc_users.py").read_text(encoding="utf-8")
    assert "/opt/hpclz/bin/hpclz-server-programs" in files


def test_the_loader_installs_the_programs_render_names() -> None:
    """hpclz-server-programs' own list (it runs on the server, without hpclz) is the one render and egress read."""
    tree = ast.parse((TEMPLATES / "server_programs.py").read_text(encoding="utf-8"))
    (programs,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "PROGRAMS" for t in node.targets)
    ]
    assert {name: f"cloud-init/{source}" for source, name in programs} == SERVER_PROGRAMS


def test_user_data_carries_the_cluster_its_parameters_and_the_account(preset_path: Path) -> None:
    document = _user_data(preset_path.stem)
    artifacts = _artifacts(preset_path.stem)
    assert document["kind"] == "hpclz-cyclecloud-cluster"
    assert document["template"] == shipped_template(artifacts["cyclecloud/slurm-cluster.txt"])
    assert document["parameters"] == artifacts["cyclecloud/slurm-params.json"]
    assert document["account"] == artifacts["cyclecloud/azure-account.json"]
    plan = preset_plan(preset_path.stem)
    assert document["cluster"] == f"{plan.landing_zone}-{plan.environment}"


def test_a_partition_edit_changes_user_data_but_not_custom_data() -> None:
    def add(data: dict[str, Any]) -> None:
        data["compute"]["partitions"].append({"name": "viz", "vm_size": "Standard_NV36ads_A10_v5", "max_nodes": 2})

    (before,) = cyclecloud_vms(preset_plan("finance"))
    (after,) = cyclecloud_vms(variant("finance", add))
    assert after["properties"]["osProfile"]["customData"] == before["properties"]["osProfile"]["customData"]
    assert after["properties"]["userData"] != before["properties"]["userData"]


def test_user_data_is_always_xz_compressed_and_an_oversized_one_refused() -> None:
    small = '{"cluster": "x"}\n'
    assert _unpacked_xz(user_data(small)) == small
    large = json.dumps({"template": "".join(f"line {i}\n" for i in range(20000))})
    encoded = user_data(large)
    assert len(encoded) <= USER_DATA_LIMIT and encoded == user_data(large)
    assert _unpacked_xz(encoded) == large
    with pytest.raises(HpclzError, match="userData limit"):
        user_data(base64.b64encode(os.urandom(60000)).decode())


def test_one_nodearray_per_partition_with_its_settings() -> None:
    arrays = _nodearrays(_artifacts("finance")["cyclecloud/slurm-cluster.txt"])
    assert set(arrays) == {"login", "hx", "montecarlo"}
    assert 'MachineType = "Standard_HX176rs"' in arrays["hx"] and "MaxCount = 16" in arrays["hx"]
    assert "Azure.SinglePlacementGroup = true" in arrays["hx"]
    assert "Interruptible = true" in arrays["montecarlo"] and "MaxPrice = -1" in arrays["montecarlo"]
    assert 'ShutdownPolicy = "Terminate"' in arrays["montecarlo"]
    assert "Interruptible" not in arrays["hx"] and "SinglePlacementGroup" not in arrays["montecarlo"]
    assert "slurm.default_partition = true" in arrays["hx"]
    # Idle time is Slurm's cluster-wide SuspendTime (test_the_cluster_gets_the_shortest_partition_idle_time).
    assert all("idle_time_after_jobs" not in array for array in arrays.values())


@pytest.mark.parametrize("stem", ["ai-training", "energy", "finance", "manufacturing"])
def test_only_htc_shaped_partitions_schedule_vcpus(stem: str) -> None:
    """The stock template sets slurm.use_pcpu = false on its htc and dynamic arrays "for all hyperthreaded VMs" and
    leaves hpc and gpu at the default (Azure/cyclecloud-slurm@50e6739:templates/slurm.txt l.243-247, l.285-286).
    finance's montecarlo (Standard_F72s_v2, spot, no InfiniBand, no GPU) is the presets' only such partition."""
    arrays = _nodearrays(_artifacts(stem)["cyclecloud/slurm-cluster.txt"])
    off = {name for name, text in arrays.items() if "slurm.use_pcpu = false" in text}
    assert off == ({"montecarlo"} if stem == "finance" else set())
    assert all("slurm.use_pcpu = true" not in text for text in arrays.values())


def test_gpu_partitions_lock_clocks_and_build_nvme_scratch() -> None:
    arrays = _nodearrays(_artifacts("ai-training")["cyclecloud/slurm-cluster.txt"])
    script = _scripts(arrays["h100"])[0]
    assert "nvidia-smi -pm 1" in script and "--applications-clocks=" in script
    assert "mdadm --create /dev/md/hpclz-scratch --level=0" in script and "/dev/nvme*n1" in script
    # enroot's scratch goes where cyclecloud-slurm looks first: /nvme (install.py:934-947).
    assert "NVME_BIND=${HPCLZ_NVME_BIND:-/nvme}\n" in script and 'mount --bind "$NVME_MOUNT" "$NVME_BIND"' in script
    assert "git clone" not in script and "spank_pyxis.so" not in script
    hpc = _scripts(_nodearrays(_artifacts("energy")["cyclecloud/slurm-cluster.txt"])["hbv3"])[0]
    assert "nvidia-smi" not in hpc and "mdadm --create" in hpc  # HB120rs_v3's two NVMe disks hold /scratch too
    plain = _scripts(_nodearrays(_artifacts("finance")["cyclecloud/slurm-cluster.txt"])["montecarlo"])[0]
    assert "mdadm" not in plain  # F72s_v2 has no local NVMe


def test_nodes_watch_scheduled_events_and_drain_with_an_hpclz_reason() -> None:
    script = _node_scripts(_artifacts("ai-training")["cyclecloud/slurm-cluster.txt"])[0]
    assert "metadata/scheduledevents?api-version=2020-07-01" in script
    assert '"drain_on": ["Preempt", "Reboot", "Redeploy", "Terminate"]' in script
    # The boot gate the watcher asks before it resumes a node, from the bundle the scheduler installs under /sched.
    assert '"gate": ["python3", "/sched/aitrain-prod/hpclz/hpclz-node.pyz", "gate", "boot"]' in script
    watcher = (TEMPLATES / "scheduled_events.py").read_text(encoding="utf-8")
    assert 'TAG = "hpclz: scheduled-event"' in watcher and "StartRequests" in watcher


def test_scheduler_installs_hpclz_for_verify() -> None:
    """hpclz itself from the wheel in the locker, checked by its SHA-256, never from a package index (its dependencies
    only as the wheel's hash-pinned lock names them: test_install_wheel.py)."""
    scheduler = _scripts(_artifacts("energy")["cyclecloud/slurm-cluster.txt"])[0]
    # Guarded: a wheel staged after the node booted is installed by hpclz-wheel-update.timer (test_install_wheel.py).
    assert "\n/opt/hpclz/bin/hpclz-install-wheel || installed=$?\n" in scheduler
    assert "hpclz==" not in scheduler
    assert "/userAssignedIdentities/id-energy-locker-prod-scus stenergyccprodscuseb80 hpclz" in scheduler
    # Where `hpclz verify --via run-command` and `hpclz nodes` run hpclz on the scheduler (hpclz.slurm.route).
    venv = SCHEDULER_PYTHON.removesuffix("/bin/python")
    assert f"ln -sf {venv}/bin/hpclz /usr/local/bin/hpclz\n" in scheduler


def test_a_running_scheduler_checks_for_a_new_wheel_every_ten_minutes() -> None:
    """After its first install the scheduler enables hpclz-wheel-update.timer, whose service runs the same installer
    with --follow (the locker's `current` wheel: tests/render/test_install_wheel.py)."""
    scheduler = _scripts(_artifacts("energy")["cyclecloud/slurm-cluster.txt"])[0]
    units = dict(
        re.findall(
            r"cat > (/etc/systemd/system/hpclz-wheel-update\.\w+) <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$",
            scheduler,
            flags=re.S | re.M,
        )
    )
    service = units["/etc/systemd/system/hpclz-wheel-update.service"]
    timer = units["/etc/systemd/system/hpclz-wheel-update.timer"]
    assert "Type=oneshot" in service and "ExecStart=/opt/hpclz/bin/hpclz-install-wheel --follow" in service
    assert "OnUnitInactiveSec=10min" in timer and "WantedBy=timers.target" in timer
    first = scheduler.index("\n/opt/hpclz/bin/hpclz-install-wheel || installed=$?\n")
    assert first < scheduler.index("systemctl enable --now hpclz-wheel-update.timer")


def test_without_a_scheduler_identity_nothing_publishes_a_wheel_and_nothing_follows_one() -> None:
    """The locker's `current` blob is written with CycleCloud's identity, the scheduler identity
    (hpclz.render.roles.locker_assignments); without it the scheduler keeps the wheel it booted with."""

    def drop(data: dict[str, Any]) -> None:
        data["identity"]["managed_identities"] = {"scheduler": False, "compute": False}

    (compute,) = [d for d in variant("manufacturing", drop).deployments if d.component == "compute"]
    assert "wheel_locker" not in json.loads(compute.artifacts["cloud-init/cyclecloud-userdata.json"])
    scheduler = _scripts(compute.artifacts["cyclecloud/slurm-cluster.txt"])[0]
    assert (
        "\n/opt/hpclz/bin/hpclz-install-wheel\n" in scheduler
        and "/etc/systemd/system/hpclz-wheel-update" not in scheduler
    )


# What a stand-in node keeps of this machine's commands: not its Pythons, package managers or systemctl, which each
# test gives the node as it needs them.
NODE_HIDES = re.compile(r"^(python|pip|apt|dpkg|dnf|yum|systemctl)")


def node_tools(folder: Path) -> Path:
    """A folder of links to this machine's commands (/usr/bin; /bin is the same on a merged-/usr system), less
    NODE_HIDES: the rest of a stand-in node's PATH."""
    folder.mkdir(parents=True)
    for tool in Path("/usr/bin").iterdir():
        if not NODE_HIDES.match(tool.name):
            (folder / tool.name).symlink_to(tool)
    return folder


def _python_choice(scheduler: str) -> str:
    """The rendered hpclz-install-wheel's python_for_venv function."""
    start = scheduler.index("cat > /opt/hpclz/bin/hpclz-install-wheel <<'HPCLZ_EOF'\n")
    body = scheduler[start : scheduler.index("\nHPCLZ_EOF\n", start)]
    first = body.index("python_for_venv() {")
    return body[first : body.index("\n}\n", first) + 3]


@pytest.mark.parametrize(
    ("names", "chosen"),
    [
        ({"python3": "3.10", "python3.11": "3.11-no-venv", "python3.12": "3.12"}, "python3.12"),
        ({"python3": "3.12", "python3.11": "3.11"}, "python3.11"),  # python3 itself is never asked
        ({"python3": "3.10", "python3.11": "3.11-no-venv"}, None),
    ],
)
def test_the_scheduler_makes_hpclz_a_venv_with_the_newest_python_311_or_later(
    tmp_path: Path, names: dict[str, str], chosen: str | None
) -> None:
    """The venv's Python is the newest python3.N (N >= 11) whose venv works, as cyclecloud-slurm 4.0.9 finds its own
    (Azure/cyclecloud-slurm@50e6739 specs/scheduler/cluster-init/files/common.sh l.4-25); a python3.11 without
    ensurepip, as Ubuntu leaves it without python3.11-venv, is passed over. This machine's python runs each name,
    a stand-in that hides ensurepip for "-no-venv" (test_install_wheel runs the whole script on real 3.10 and 3.11)."""
    scheduler = _scripts(_artifacts("energy")["cyclecloud/slurm-cluster.txt"])[0]
    node = tmp_path / "bin"
    node.mkdir()
    hidden = tmp_path / "no-ensurepip"
    hidden.mkdir()
    (hidden / "ensurepip.py").write_text("raise ModuleNotFoundError(\"No module named 'ensurepip'\")\n")
    for name, kind in names.items():
        hide = f"PYTHONPATH={hidden} " if kind.endswith("-no-venv") else ""
        (node / name).write_text(f'#!/bin/sh\n{hide}exec {sys.executable} "$@"\n', encoding="utf-8")
        (node / name).chmod(0o755)
    script = f"{_python_choice(scheduler)}python_for_venv\n"
    env = {"PATH": f"{node}:{node_tools(tmp_path / 'tools')}"}
    ran = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False, env=env)
    assert (ran.stdout.strip() or None) == (str(node / chosen) if chosen else None), ran.stderr


def test_shared_file_systems_are_mounted_from_arm_lookups() -> None:
    energy = _node_scripts(_artifacts("energy")["cyclecloud/slurm-cluster.txt"])[0]
    assert 'hpclz_fstab "$addr@tcp:/lustrefs" /lustre lustre' in energy and "properties.clientInfo.mgsAddress" in energy
    # Two NetApp volumes (apps, results); home is the shared NFS account, mounted by CycleCloud instead.
    cae = _node_scripts(_artifacts("manufacturing")["cyclecloud/slurm-cluster.txt"])[0]
    assert cae.count(" nfs rw,hard,") == 2 and "vers=3" in cae and "vers=4.1" in cae


def test_scheduler_and_login_nodes_mount_what_the_jobs_mount() -> None:
    """Users on the login node and slurmctld's prolog see the same /lustre as the jobs."""
    cluster = _artifacts("energy")["cyclecloud/slurm-cluster.txt"]
    scheduler, login = _scripts(cluster)[:2]
    assert "hpclz on the Slurm scheduler node" in scheduler and "hpclz on the Slurm login nodes" in login
    for script in (scheduler, login):
        assert 'hpclz_fstab "$addr@tcp:/lustrefs"' in script and "properties.clientInfo.mgsAddress" in script


def test_cluster_follows_the_stock_cyclecloud_slurm_template() -> None:
    """Azure/cyclecloud-slurm@b26ab06:templates/slurm.txt (3.0.11) with NodeNameIsHostname and the built-in /sched
    and /shared at their defaults: node names are host names, and the scheduler exports both volumes."""

    def no_shared_home(data: dict[str, Any]) -> None:
        data["storage"]["shared"] = {"mode": "disabled"}

    compute = next(d for d in variant("ai-training", no_shared_home).deployments if d.component == "compute")
    cluster = compute.artifacts["cyclecloud/slurm-cluster.txt"]
    assert "cyclecloud.hosts.standalone_dns.enabled = false" in cluster
    assert "cyclecloud.hosts.simple_vpc_dns.enabled = false" in cluster
    arrays = _nodearrays(cluster)
    assert all("slurm.use_nodename_as_hostname = true" in text for text in arrays.values())
    for volume, size in (("sched", 30), ("shared", 100)):
        assert f"[[[volume {volume}]]]\n        Size = {size}" in cluster
        assert f"[[[configuration cyclecloud.exports.builtin{volume}]]]\n        export_path = /{volume}" in cluster
    assert "[[[cluster-init slurm:default:4.0.9]]]" in cluster
    # With storage.shared (every preset) the scheduler keeps no volumes of its own: it mounts the NFS shares too.
    with_share = _artifacts("ai-training")["cyclecloud/slurm-cluster.txt"]
    assert "[[[volume sched]]]" not in with_share and "cyclecloud.mounts.nfs_sched.disabled" not in with_share
    assert "[[[cluster-init slurm:default:4.0.9]]]" in with_share


def test_an_infiniband_scale_set_stays_within_one_placement_group() -> None:
    """A placement group holds at most 100 VMs
    (learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-placement-groups)."""

    def grow(data: dict[str, Any]) -> None:
        data["compute"]["partitions"][0]["max_nodes"] = 300
        data["compute"].setdefault("quotas", {})

    compute = next(d for d in variant("ai-training", grow).deployments if d.component == "compute")
    arrays = _nodearrays(compute.artifacts["cyclecloud/slurm-cluster.txt"])
    sizes = [int(m) for text in arrays.values() for m in re.findall(r"Azure.MaxScalesetSize = (\d+)", text)]
    assert sizes and max(sizes) == 100


def test_bootstrap_turns_https_on_before_initializing_over_https() -> None:
    """CycleCloud ships with HTTPS off; CCWS sets webServerEnableHttps and the SSL port in
    cycle_server.properties and restarts before `cyclecloud initialize --url=https://localhost:443`
    (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/files-to-load/cyclecloud_install.py)."""
    files = {f["path"]: f["content"] for f in _cloud_config("energy")["write_files"]}
    lines = files["/opt/hpclz/bin/bootstrap-cyclecloud"].splitlines()

    def first(fragment: str) -> int:
        return next(i for i, line in enumerate(lines) if fragment in line and not line.startswith("#"))

    assert first("webServerEnableHttps=true") < first("cycle_server start") < first("await_startup")
    assert first("await_startup") < first("cyclecloud initialize --batch --url=https://localhost:443")
    # CCWS waits, bounded, for the web server and the imported records before the CLI signs in
    # (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/install.sh l.256-257, l.262-263).
    initialize = first("cyclecloud initialize --batch --url=https://localhost:443")
    assert first("await_startup") < first("hpclz-cc-await https") < initialize
    assert first("mv /opt/hpclz/hpclz-admin.json") < first("hpclz-cc-await imported") < initialize
    assert "/opt/cycle_server/config/data/hpclz-admin.json" in lines[first("hpclz-cc-await imported")]
    assert "/opt/hpclz/bin/hpclz-cc-await" in files


def _bootstrap(plan: Any) -> str:
    (vm,) = cyclecloud_vms(plan)
    files = YAML(typ="safe").load(_unpacked(vm["properties"]["osProfile"]["customData"]))["write_files"]
    return str(next(f["content"] for f in files if f["path"] == "/opt/hpclz/bin/bootstrap-cyclecloud"))


@pytest.mark.parametrize("entra", [True, False])
def test_every_file_imported_by_cyclecloud_is_owned_by_cycle_server(entra: bool) -> None:
    """CycleCloud runs as cycle_server and imports what lands in its data directory; CCWS chowns each record file to
    cycle_server:cycle_server and then moves it in, "since ownership matters" (Azure/cyclecloud-slurm-workspace@bc0fc1b:
    bicep/files-to-load/cyclecloud_install.py lines 215-224). A file written there directly as root under umask 077
    (0600, root) is never read: the admin user would never exist."""

    def drop(data: dict[str, Any]) -> None:
        data["identity"].pop("cyclecloud_entra", None)

    bootstrap = _bootstrap(preset_plan("energy") if entra else variant("energy", drop))
    lines = [line.strip() for line in bootstrap.splitlines() if not line.lstrip().startswith("#")]
    data_dir = "/opt/cycle_server/config/data/"
    targets = [(i, line) for i, line in enumerate(lines) if data_dir in line and "hpclz-cc-await" not in line]
    assert any("hpclz-admin.json" in line for _, line in targets)
    assert any("entra_auth.txt" in line for _, line in targets) is entra
    for index, line in targets:
        move = re.fullmatch(rf"mv (\S+) {re.escape(data_dir)}\S+", line)
        assert move, f"written into CycleCloud's data directory other than by mv: {line}"
        assert f"chown cycle_server:cycle_server {move[1]}" in lines[:index], line


def test_cyclecloud_entra_imports_the_ccws_records_and_signs_the_cli_in_with_the_vm_identity() -> None:
    """As CCWS's installer (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/install.sh, ENABLE_ENTRA_AUTH)."""
    bootstrap = _bootstrap(preset_plan("energy"))
    for record in (
        'Value = "$ENTRA_TENANT_ID"\nName = "authentication.entra.tenantid"',
        'Value = "$ENTRA_CLIENT_ID"\nName = "authentication.entra.clientid"',
        'Value = "$ENTRA_ENDPOINT"\nName = "authentication.entra.endpoint"',
        'Value = true\nName = "authentication.entra.enabled"',
        'EntraOID = "$ENTRA_OBJECT_ID"',
        'Roles = {"Administrator","User","Cluster Creator"}',
        "NodeAccessDisabled = true",
        "ServiceAccount = true",
    ):
        assert record in bootstrap, record
    assert "ENTRA_TENANT_ID=b7e41d96-05a3-4f2c-8e19-6a3d2c9f7b15" in bootstrap
    assert "ENTRA_CLIENT_ID=3f0c9a52-7d1e-4b8a-9c64-2e5b81d7a4f0" in bootstrap
    assert "ENTRA_ENDPOINT=https://login.microsoftonline.com" in bootstrap
    lines = bootstrap.splitlines()
    wait = next(
        i
        for i, line in enumerate(lines)
        if line.startswith("/opt/hpclz/bin/hpclz-cc-await imported /opt/cycle_server/config/data/entra_auth.txt")
    )
    initialize = lines.index(
        'cyclecloud initialize --batch --identity --object_id="$ENTRA_OBJECT_ID" --url=https://localhost '
        "--verify-ssl=false --force"
    )
    password = next(
        i for i, line in enumerate(lines) if line.startswith("cyclecloud initialize") and "--password" in line
    )
    assert password < wait < initialize < lines.index("systemctl start hpclz-cluster-sync.service")
    # The service account is the VM's system-assigned identity, which the server then has.
    (vm,) = cyclecloud_vms(preset_plan("energy"))
    assert vm["identity"]["type"].startswith("SystemAssigned")


def test_without_cyclecloud_entra_the_bootstrap_keeps_password_sign_in() -> None:
    def drop(data: dict[str, Any]) -> None:
        del data["identity"]["cyclecloud_entra"]

    bootstrap = _bootstrap(variant("energy", drop))
    assert "authentication.entra" not in bootstrap and "--identity" not in bootstrap
    assert "entra_auth.txt" not in bootstrap
    assert '--username="$ADMIN" --password="$password"' in bootstrap


def test_cyclecloud_entra_alone_gives_the_server_a_system_assigned_identity() -> None:
    def entra_only(data: dict[str, Any]) -> None:
        data["identity"]["entra_login"] = False
        data["identity"]["groups"] = {}
        data["identity"]["managed_identities"] = {"scheduler": False, "compute": True}

    (vm,) = cyclecloud_vms(variant("energy", entra_only))
    assert vm["identity"]["type"] == "SystemAssigned"


def test_an_existing_lustre_with_its_address_is_mounted_without_a_node_identity() -> None:
    def existing(data: dict[str, Any]) -> None:
        data["storage"]["lustre"] = {
            "mode": "existing",
            "resource_id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-fs/providers/"
            "Microsoft.StorageCache/amlFilesystems/shared",
            "mgs_address": "10.9.0.4",
            "mount_point": "/shared",
        }
        data["identity"].setdefault("managed_identities", {})["compute"] = False

    compute = next(d for d in variant("energy", existing).deployments if d.component == "compute")
    script = _node_scripts(compute.artifacts["cyclecloud/slurm-cluster.txt"])[0]
    assert "addr=10.9.0.4" in script and 'hpclz_fstab "$addr@tcp:/lustrefs" /shared lustre' in script


def test_node_and_bootstrap_scripts_are_valid_bash(preset_path: Path, tmp_path: Path) -> None:
    require(shutil.which("bash") is not None, "bash")
    artifacts = _artifacts(preset_path.stem)
    files = {f["path"]: f["content"] for f in _cloud_config(preset_path.stem)["write_files"]}
    scripts = [*_scripts(artifacts["cyclecloud/slurm-cluster.txt"]), files["/opt/hpclz/bin/bootstrap-cyclecloud"]]
    for index, text in enumerate(scripts):
        path = tmp_path / f"script{index}.sh"
        path.write_text(text, encoding="utf-8")
        checked = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert checked.returncode == 0, f"script {index}: {checked.stderr}"


@pytest.mark.parametrize("name", ["scheduled_events.py", "arm_get.py", "cluster_sync.py", "server_programs.py"])
def test_node_helpers_are_valid_python(name: str) -> None:
    source = (TEMPLATES / name).read_text(encoding="utf-8")
    compile(source, name, "exec")
    assert "{{" not in source and "{%" not in source and "{#" not in source


def test_custom_data_is_always_gzipped_deterministically_and_an_oversized_one_refused() -> None:
    small = "#cloud-config\nruncmd: []\n"
    assert custom_data(small) == custom_data(small)  # mtime 0: the same bytes on every run
    assert gzip.decompress(base64.b64decode(custom_data(small))).decode() == small
    large = "#cloud-config\n" + "x" * (CUSTOM_DATA_LIMIT + 10)
    assert gzip.decompress(base64.b64decode(custom_data(large))).decode() == large
    noise = base64.b64encode(os.urandom(70000)).decode()  # random bytes barely compress
    with pytest.raises(
        HpclzError, match=r"^compute\.cyclecloud: the CycleCloud server's cloud-init is \d+ bytes compressed"
    ):
        custom_data(noise)
    with pytest.raises(
        HpclzError,
        match=r"^portal: the portal's boot script is \d+ bytes compressed, over Azure's 65535-byte customData limit$",
    ):
        custom_data(noise, "portal: the portal's boot script")


def test_the_cluster_gets_the_shortest_partition_idle_time() -> None:
    """cyclecloud-slurm 4.0.9 writes partition lines with no SuspendTime= (Azure/cyclecloud-slurm@50e6739:
    azure-slurm/slurmcc/cli.py l.862-864): the shortest idle time becomes the SuspendTime hpclz appends to
    slurm.conf, after the template's SuspendTime=300 (templates/slurm.conf.template l.47)."""

    def suspend(stem: str) -> list[str]:
        params = json.loads(_artifacts(stem)["cyclecloud/slurm-params.json"])
        return re.findall(r"^SuspendTime=(\d+)$", params["HpclzSlurmConfig"], re.M)

    def edit(doc: dict[str, Any]) -> None:
        doc["compute"]["partitions"][0]["idle_shutdown_minutes"] = 7
        doc["compute"]["partitions"][1]["idle_shutdown_minutes"] = 20

    assert suspend("finance") == ["300"]
    assert suspend("ai-training") == []
    (compute,) = [d for d in variant("finance", edit).deployments if d.component == "compute"]
    params = json.loads(compute.artifacts["cyclecloud/slurm-params.json"])
    assert re.findall(r"^SuspendTime=(\d+)$", params["HpclzSlurmConfig"], re.M) == ["420"]
    assert "idle_time_after_jobs =" not in _artifacts("finance")["cyclecloud/slurm-cluster.txt"]


def test_shared_home_and_sched_are_cyclecloud_nfs_mounts_on_every_node() -> None:
    """Mounts in [[node defaults]] reach the scheduler, login and every partition; the stock cyclecloud-slurm
    template declares /shared and /sched the same way (Azure/cyclecloud-slurm templates/slurm.txt)."""
    template = _artifacts("energy")["cyclecloud/slurm-cluster.txt"]
    defaults = template.split("[[node scheduler]]")[0]
    account = "stenergynfsprodscuseb80"  # global name: it carries the zone's unique suffix too
    for name, mount, share in (("nfs_shared", "/shared", "home"), ("nfs_sched", "/sched", "sched")):
        block = defaults.split(f"[[[configuration cyclecloud.mounts.{name}]]]")[1].split("\n\n")[0]
        assert f'mountpoint = "{mount}"' in block
        assert f'export_path = "/{account}/{share}"' in block
        assert f'address = "{account}.file.core.windows.net"' in block
        # The options the Azure Files NFS mount docs give (storage-files-how-to-mount-nfs-shares).
        assert 'options = "vers=4,minorversion=1,sec=sys,nconnect=4"' in block
    assert "cyclecloud.exports.sched.disabled = true" in defaults


def test_accounting_wires_slurmdbd_through_cluster_settings_and_never_renders_the_password() -> None:
    """cyclecloud-slurm's slurm.accounting.{enabled,url,user,password} (Azure/cyclecloud-slurm templates/slurm.txt)."""

    def edit(data: dict[str, Any]) -> None:
        data["compute"]["accounting"] = {
            "mode": "existing",
            "url": "slurmdb-prod.mysql.database.azure.com",
            "user": "slurmdbd",
            "password_secret_name": "slurmdb-password",
        }
        data["identity"]["key_vault"]["secrets"]["slurmdb-password"] = "never-rendered-value"

    plan = variant("finance", edit)
    (compute,) = [d for d in plan.deployments if d.component == "compute"]
    template = compute.artifacts["cyclecloud/slurm-cluster.txt"]
    assert "slurm.accounting.enabled = true" in template
    assert 'slurm.accounting.url = "slurmdb-prod.mysql.database.azure.com"' in template
    assert 'slurm.accounting.user = "slurmdbd"' in template
    # The MySQL admin password reaches the scheduler alone: cyclecloud-slurm reads it only there
    # (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py l.358-363); anywhere else, every node's jetpack
    # configuration would hold it too. (It still reaches root on every node through /sched's slurmdbd.conf:
    # install.py l.139, l.417-436, reported by HPCLZ-CMP-047.)
    defaults, rest = template.split("    [[node scheduler]]\n")
    scheduler = rest.split("\n    [[nodearray ")[0]
    assert "slurm.accounting.password" not in defaults
    assert scheduler.count("slurm.accounting.password = $AccountingPassword") == 1
    assert template.count("slurm.accounting.password") == 1
    everything = json.dumps([d.template for d in plan.deployments]) + json.dumps(
        [d.artifacts for d in plan.deployments]
    )
    assert "never-rendered-value" not in everything
    (identity,) = [d for d in plan.deployments if d.component == "identity"]
    roles = [
        r["properties"]["description"]
        for r in identity.template["resources"]
        if r["type"] == "Microsoft.Authorization/roleAssignments"
    ]
    assert any("Key Vault Secrets User" in text and "scheduler" in text for text in roles), roles


@pytest.mark.parametrize("stem", ["ai-training", "energy", "finance"])
def test_the_accounting_password_goes_to_the_scheduler_alone(stem: str) -> None:
    """Every preset with Slurm accounting: the password setting appears once, in [[node scheduler]]."""
    template = _artifacts(stem)["cyclecloud/slurm-cluster.txt"]
    assert "slurm.accounting.enabled = true" in template
    scheduler = template.split("    [[node scheduler]]\n")[1].split("\n    [[nodearray ")[0]
    assert template.count("slurm.accounting.password") == 1
    assert "slurm.accounting.password = $AccountingPassword" in scheduler


def test_accounting_is_off_unless_configured() -> None:
    template = _artifacts("manufacturing")["cyclecloud/slurm-cluster.txt"]
    assert "slurm.accounting.enabled = false" in template and "AccountingPassword" not in template


def test_locker_is_reached_with_a_managed_identity() -> None:
    """With shared keys disabled the locker needs LockerAuthMode=ManagedIdentity and a
    LockerIdentity, the fields CCWS's installer writes (Azure/cyclecloud-slurm-workspace@bc0fc1b:
    bicep/files-to-load/cyclecloud_install.py)."""
    account = json.loads(_artifacts("finance")["cyclecloud/azure-account.json"])
    assert account["LockerAuthMode"] == "ManagedIdentity"
    assert account["LockerIdentity"].endswith("/userAssignedIdentities/id-riskgrid-locker-prod-weu")


@pytest.mark.parametrize("stem", ["ai-training", "energy"])
def test_cyclecloud_server_boots_microsofts_marketplace_image(stem: str) -> None:
    """As CCWS 2026.07.02 deploys it (bicep/mainTemplate.bicep:13, bicep/vm.bicep:46-50, bicep/ccw.bicep:121-149):
    the pinned azure-cyclecloud image, its purchase plan from the URN's first three parts, its data disk from the
    image."""
    (vm,) = cyclecloud_vms(preset_plan(stem))
    storage = vm["properties"]["storageProfile"]
    assert storage["imageReference"] == {
        "publisher": "azurecyclecloud",
        "offer": "azure-cyclecloud",
        "sku": "cyclecloud8-gen2",
        "version": "8.9.120260630",
    }
    assert vm["plan"] == {"publisher": "azurecyclecloud", "product": "azure-cyclecloud", "name": "cyclecloud8-gen2"}
    (disk,) = storage["dataDisks"]
    assert (disk["lun"], disk["createOption"], disk["managedDisk"]) == (
        0,
        "FromImage",
        {"storageAccountType": "Premium_LRS"},
    )
    assert "diskSizeGB" not in disk


def test_an_image_of_another_publisher_gets_no_plan_and_an_empty_disk() -> None:
    def alma(data: dict[str, Any]) -> None:
        data["compute"]["cyclecloud"]["image"] = "almalinux:almalinux-x86_64:8-gen2:8.10.2024082001"

    (compute,) = [d for d in variant("energy", alma).deployments if d.component == "compute"]
    (vm,) = [r for r in compute.template["resources"] if r["type"] == "Microsoft.Compute/virtualMachines"]
    assert "plan" not in vm
    (disk,) = vm["properties"]["storageProfile"]["dataDisks"]
    assert (disk["createOption"], disk["diskSizeGB"]) == ("Empty", 128)


def test_the_account_names_the_identity_that_holds_cyclecloud_roles() -> None:
    """CycleCloud orchestrates with the identity whose client ID the account names; none named means the VM's
    system-assigned identity (learn.microsoft.com/azure/cyclecloud/how-to/managed-identities). Every CycleCloud role
    goes to the scheduler identity, so the account names it: its client ID read from ARM at import time."""
    document = json.loads(_artifacts("energy")["cloud-init/cyclecloud-userdata.json"])
    account = json.loads(document["account"])
    assert account["AzureRMUseManagedIdentity"] is True and "AzureRMApplicationId" not in account
    lookup = json.loads(document["account_lookups"])["AzureRMApplicationId"]
    assert lookup["field"] == "properties.clientId"
    assert lookup["resource"] == lookup["identity"]
    assert lookup["resource"].endswith(
        "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-energy-scheduler-prod-scus"
    )
    assert document["project"] == "https://github.com/Azure/cyclecloud-slurm/releases/4.0.9"
