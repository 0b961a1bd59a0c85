"""`hpclz verify` from the deploying machine: found by CycleCloud's tags, run on the "scheduler" through a managed
Run Command, report back through a blob.

End to end with real parts: the Azure SDK's compute and blob clients against the ARM stand-in (which runs the
script here, as the scheduler's Run Command agent would, against the local Slurm cluster) and Azurite.
The scheduler's tags are those CycleCloud puts on a head node (https://learn.microsoft.com/azure/cyclecloud/
how-to/tag-nodes: ClusterName, Name), its name `scheduler` that of cyclecloud-slurm's `[[node scheduler]]`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hpclz.azure.backends import open_backend
from hpclz.config.loader import load_config
from hpclz.state.model import DeploymentRecord, DeploymentStatus, ResourceRecord, StateDocument
from tests.conftest import FIXTURES, REPO, CliResult
from tests.support import slurm as harness
from tests.support.arm_standin import ArmStandIn
from tests.support.azurite import Azurite, azurite  # noqa: F401  (a fixture, used by name)
from tests.support.slurm import LocalSlurm
from tests.verify.test_dispatch_slurm import GOOD, XID79, plant

slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm

COMPUTE_RG = "rg-aitrain-compute-prod"
CLUSTER = "aitrain-prod"  # hpclz.render.cloudinit.cluster_name: <metadata.name>-<environment>


@pytest.fixture
def zone(tmp_path: Path) -> Path:
    folder = tmp_path / "zone"
    folder.mkdir()
    shutil.copy(REPO / "configs" / "ai-training.yaml", folder / "lz.yaml")
    return folder / "lz.yaml"


def record_compute_group(config: Path, group: str = COMPUTE_RG, resources: list[ResourceRecord] | None = None) -> None:
    """What `hpclz deploy` leaves in the state: the compute deployment and the group it went to."""
    loaded = load_config(config)
    backend = open_backend(loaded.config, base_dir=config.parent)
    meta = loaded.config.metadata
    record = DeploymentRecord(
        name="compute",
        component="compute",
        scope="resourceGroup",
        resource_group=group,
        template_hash="0" * 64,
        status=DeploymentStatus.SUCCEEDED,
    )
    doc = StateDocument(
        landing_zone=meta.name,
        environment=meta.environment.value,
        deployments={"compute": record},
        resources=resources or [],
    )
    with backend.lock("test"):
        backend.read()
        backend.write(doc)


@pytest.fixture
def scheduler_vm(
    clean_slurm: LocalSlurm,
    azurite: Azurite,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[ArmStandIn]:
    """The stand-in with CycleCloud's VMs in the compute group; its Run Commands see the local Slurm cluster."""
    for key, value in clean_slurm.job_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HPCLZ_VERIFY_FIXTURES", str(tmp_path / "readings"))
    monkeypatch.setenv("HPCLZ_VERIFY_MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    monkeypatch.setenv("HPCLZ_STATE_CONNECTION_STRING", azurite.connection_string)
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as arm:
        arm.compute.vm_env = {k: v for k, v in os.environ.items() if not k.startswith("HPCLZ_ARM")}
        for node, extra in (("scheduler", {"Name": "scheduler"}), ("gpu-1", {})):
            arm.compute.add(COMPUTE_RG, f"{CLUSTER}-{node}", {"ClusterName": CLUSTER, **extra})
        arm.compute.add(COMPUTE_RG, "other-scheduler", {"ClusterName": "other", "Name": "scheduler"})
        # Only the run on the scheduler may reach Slurm: this machine is "where hpclz deploy ran".
        for key in clean_slurm.job_env:
            monkeypatch.delenv(key, raising=False)
        yield arm


def _remote(run_cli: Callable[..., CliResult], zone: Path, *args: str) -> CliResult:
    # --work-dir: the scheduler's shared folder (here: beside the zone), in which each run makes and removes its own.
    shared = zone.parent / "scheduler-shared"
    return run_cli(
        "verify",
        str(zone),
        "--via",
        "run-command",
        "-p",
        "gpu",
        "--scheduler-python",
        sys.executable,
        "--work-dir",
        str(shared),
        *args,
    )


def _left_on_scheduler(zone: Path) -> list[str]:
    root = zone.parent / "scheduler-shared"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


@pytest.mark.timeout(240)
def test_verify_from_the_deploying_machine_runs_on_the_tagged_scheduler_and_brings_the_whole_report_back(
    scheduler_vm: ArmStandIn, zone: Path, run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    plant(tmp_path / "readings", {"node1": GOOD, "node2": XID79, "node3": GOOD, "node4": GOOD})
    record_compute_group(zone)
    junit = tmp_path / "verify.xml"
    result = _remote(run_cli, zone, "--junit", str(junit))

    assert result.exit_code == 6, result.stderr  # a node failed, as a verify run on the scheduler exits
    assert f"virtualMachines/{CLUSTER}-scheduler" in result.stderr  # the tagged head node, not gpu-1 or "other"
    # hpclz exited 6 there, so the run command ended Failed; the report, not that state, decides the outcome.
    progress = [ln for ln in result.stderr.splitlines() if ln.startswith("run command on ")]
    assert progress[-1] == f"run command on {CLUSTER}-scheduler: Failed"
    bad = [ln for ln in result.stdout.splitlines() if ln.startswith("bad node ")]
    assert bad == [
        "bad node node2: HPCLZ-VFY-006 Fatal Xid events in the kernel log: "
        "Xid 79 (GPU has fallen off the bus) on GPU 2 (00000003:00:00.0)"
    ]
    suites = {s.get("name", ""): s for s in ET.parse(junit).getroot().iter("testsuite")}
    assert sorted(suites) == ["node node1", "node node2", "node node3", "node node4"]
    assert suites["node node2"].get("failures") == "1"
    [script] = scheduler_vm.compute.scripts
    assert "python" in script and "--via slurm" in script and "-p gpu" not in script  # long forms only
    assert "HPCLZ_VERIFY_CONFIG_B64" in script and "aitrain" not in script  # the config rides as a protected parameter
    assert scheduler_vm.compute.commands == {}  # deleted after the run: none left on the VM
    # Health checks only on a partition the config does not size: startup, one queue wait, one node budget, grace.
    assert f"virtualMachines/{CLUSTER}-scheduler (time limit 1230 s)" in result.stderr
    assert _left_on_scheduler(zone) == []  # the run's folder, config copy included, went when its script ended


@pytest.mark.timeout(240)
def test_remote_json_envelope_is_the_schedulers_report_and_an_explicit_scheduler_skips_the_tags(
    scheduler_vm: ArmStandIn, zone: Path, run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    plant(tmp_path / "readings", {"node1": GOOD, "node2": GOOD, "node3": GOOD, "node4": GOOD})
    [vm_id] = [vm["id"] for vm in scheduler_vm.compute.vms(COMPUTE_RG) if vm["name"] == "other-scheduler"]
    result = _remote(run_cli, zone, "--scheduler", vm_id, "-o", "json")  # no state needed with --scheduler
    envelope = json.loads(result.stdout)
    assert result.exit_code == 0, result.stdout
    assert envelope["ok"] is True and envelope["result"]["outcome"] == "passed"
    assert [n["node"] for n in envelope["result"]["nodes"]] == ["node1", "node2", "node3", "node4"]
    work_dir = envelope["result"]["work_dir"]  # the scheduler's folder, not ours, and gone once the report was read
    assert work_dir.startswith(f"{zone.parent / 'scheduler-shared'}/verify-") and work_dir.endswith("/run")
    assert not Path(work_dir).exists() and _left_on_scheduler(zone) == []
    assert "virtualMachines/other-scheduler" in result.stderr
    assert result.stderr.splitlines()[-1] == "run command on other-scheduler: Succeeded"


def test_no_tagged_scheduler_is_one_line_naming_the_tags_and_the_way_out(
    scheduler_vm: ArmStandIn, zone: Path, run_cli: Callable[..., CliResult]
) -> None:
    record_compute_group(zone, "rg-elsewhere")
    result = _remote(run_cli, zone)
    assert result.exit_code == 64
    assert "error: no VM tagged ClusterName=aitrain-prod Name=scheduler in resource group rg-elsewhere" in result.stderr
    assert "--scheduler VM_RESOURCE_ID" in result.stderr
    assert scheduler_vm.compute.scripts == []


def test_a_scheduler_option_that_is_not_a_vm_id_is_refused_before_azure_is_called(
    scheduler_vm: ArmStandIn, zone: Path, run_cli: Callable[..., CliResult]
) -> None:
    result = _remote(run_cli, zone, "--scheduler", "aitrain-prod-scheduler")
    assert result.exit_code == 64
    assert "--scheduler aitrain-prod-scheduler: not a VM resource ID" in result.stderr
    assert scheduler_vm.writes() == []


BASTION = "/subscriptions/00000000-0000-0000-0000-00000000c0de/resourceGroups/rg-aitrain-network-prod/providers/Microsoft.Network/bastionHosts/bas-aitrain-prod"


def test_via_ssh_prints_the_bastion_command_for_the_tagged_scheduler_and_runs_nothing(
    scheduler_vm: ArmStandIn, zone: Path, run_cli: Callable[..., CliResult]
) -> None:
    bastion = ResourceRecord(
        id=BASTION,
        type="Microsoft.Network/bastionHosts",
        name="bas-aitrain-prod",
        api_version="2024-05-01",
        deployment="network",
    )
    record_compute_group(zone, resources=[bastion])
    result = run_cli("verify", str(zone), "--via", "ssh", "--nccl")
    assert result.exit_code == 64
    [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    vm_id = next(vm["id"] for vm in scheduler_vm.compute.vms(COMPUTE_RG) if vm["name"] == f"{CLUSTER}-scheduler")
    # The command Azure's Bastion native-client page gives (learn.microsoft.com/azure/bastion/connect-vm-native-client-linux).
    assert (
        f"az network bastion ssh --name bas-aitrain-prod --resource-group rg-aitrain-network-prod "
        f"--target-resource-id {vm_id} --auth-type ssh-key --username "
    ) in line
    assert line.endswith("then on the scheduler: hpclz verify CONFIG --via slurm --nccl")
    assert scheduler_vm.compute.scripts == [] and scheduler_vm.writes() == []


def test_via_ssh_without_a_bastion_in_the_state_points_at_run_command(
    scheduler_vm: ArmStandIn, zone: Path, run_cli: Callable[..., CliResult]
) -> None:
    record_compute_group(zone)
    result = run_cli("verify", str(zone), "--via", "ssh")
    assert result.exit_code == 64
    assert "error: --via ssh: no Bastion host in the state" in result.stderr
    assert "--via run-command" in result.stderr


def test_the_standins_run_command_has_the_shape_of_the_specs_example() -> None:
    example = json.loads((FIXTURES / "arm" / "runcommand_get_specexample.json").read_text())
    from tests.support.arm_standin.run_commands import RunCommand

    body = {"location": "eastus2", "properties": {"source": {"script": "true"}, "asyncExecution": True}}
    served = RunCommand(id="/x/runCommands/n", name="n", location="eastus2", body=body).view(expand=True)
    assert set(served) <= set(example) and served["type"] == example["type"]
    assert set(served["properties"]) - {"instanceView"} <= set(example["properties"])


@pytest.mark.parametrize(
    ("stdout", "stderr", "message", "code"),
    [
        # What an older hpclz on the scheduler prints for an option it lacks (click's usage error, exit 64 there).
        ("", "Error: No such option: --via\n", "returned no report (run command Failed, exit 64): Error: No such", 1),
        (
            '{"command": "verify", "ok": false, "exit_code": 64, "result": {}, "findings": [], '
            '"errors": [{"code": "USAGE", "message": "Slurm\'s sinfo is not on PATH"}]}',
            "",
            "on the scheduler: Slurm's sinfo is not on PATH",
            64,
        ),
    ],
)
def test_a_failed_remote_run_is_one_line_with_what_the_scheduler_said(
    stdout: str, stderr: str, message: str, code: int
) -> None:
    from hpclz.azure.scheduler import parse_envelope
    from hpclz.errors import HpclzError

    with pytest.raises(HpclzError) as caught:
        parse_envelope(stdout, stderr, "Failed", 64)
    assert message in caught.value.message
    assert int(caught.value.exit_code) == code


@pytest.mark.timeout(240)
def test_a_remote_run_that_fails_leaves_no_folder_on_the_scheduler(
    scheduler_vm: ArmStandIn, zone: Path, run_cli: Callable[..., CliResult]
) -> None:
    record_compute_group(zone)
    result = _remote(run_cli, zone, "--scheduler-python", "/bin/false")  # no hpclz there: exits 1 before any report
    assert result.exit_code == 1
    assert "returned no report (run command Failed, exit 1)" in result.stderr
    assert _left_on_scheduler(zone) == [] and len(scheduler_vm.compute.scripts) == 1  # its own trap cleaned up


@pytest.mark.timeout(240)
def test_a_run_stopped_at_its_time_limit_is_cleaned_by_a_second_run_command(
    scheduler_vm: ArmStandIn, zone: Path, tmp_path: Path
) -> None:
    """The stand-in stops a run at its timeoutInSeconds as the agent does (state TimedOut, the script killed, so
    its EXIT trap never runs); hpclz then removes the folder with a run command of its own."""
    from hpclz.errors import HpclzError
    from hpclz.verify.remote import RemoteRequest, run_remote

    hung = tmp_path / "hung-python"
    hung.write_text("#!/bin/sh\nexec sleep 4\n")  # a verify that never answers
    hung.chmod(0o755)
    record_compute_group(zone)
    lines: list[str] = []
    request = RemoteRequest(
        verify_args=["--via", "slurm"],
        python=str(hung),
        timeout_s=2,
        work_root=str(zone.parent / "scheduler-shared"),
        progress=lines.append,
    )
    with pytest.raises(HpclzError) as caught:
        run_remote(load_config(zone), request, COMPUTE_RG)
    assert "did not finish within its time limit of 2 s" in caught.value.message
    assert f"run command on {CLUSTER}-scheduler: TimedOut" in lines
    first, cleanup = scheduler_vm.compute.scripts
    assert "sleep" not in first and "rm -rf -- " in cleanup and str(zone.parent / "scheduler-shared") in cleanup
    assert any(line.startswith("removed ") and line.endswith(" on the scheduler") for line in lines), lines
    assert _left_on_scheduler(zone) == [] and scheduler_vm.compute.commands == {}


def test_the_time_limit_follows_the_partitions_sizes_and_nccl_and_stops_at_a_day() -> None:
    from hpclz.verify.remote import RUN_COMMAND_CEILING_S, Workload, time_limit_s
    from hpclz.verify.session import VerifyOptions, remote_time_limit

    config = load_config(REPO / "configs" / "ai-training.yaml").config  # h100: 64 nodes, h200: 32; 300 s checks
    health = remote_time_limit(config, VerifyOptions(config=Path("lz.yaml")))
    assert health == 300 + 300 + 600 + 30  # startup, queue wait, node budget (2 x 300 s), Slurm's grace
    step = 300 + 30  # each collective job's budget and grace
    nccl = remote_time_limit(config, VerifyOptions(config=Path("lz.yaml"), nccl=True))
    assert nccl == health + sum(300 + (n + 1) * step + 300 + 2 * step for n in (64, 32))
    one = remote_time_limit(config, VerifyOptions(config=Path("lz.yaml"), nccl=True, partition="h200"))
    assert health < one < nccl
    huge = Workload(node_budget_s=600, collective_budget_s=3600, queue_wait_s=300, partition_nodes=[10000], nccl=True)
    assert time_limit_s(huge) == RUN_COMMAND_CEILING_S == 86400


def test_a_relative_work_dir_for_the_scheduler_is_refused_before_azure_is_called(
    zone: Path, run_cli: Callable[..., CliResult]
) -> None:
    result = run_cli("verify", str(zone), "--via", "run-command", "--work-dir", "runs")
    assert result.exit_code == 64
    assert "error: --work-dir runs: with --via run-command it is a folder on the scheduler" in result.stderr
