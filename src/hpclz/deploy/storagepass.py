"""Deploy's slurmdbd step: a rotated Slurm accounting password reaches the slurmdbd that runs on the scheduler.

Where the password lives: Key Vault (the identity deployment), the MySQL flexible server's administrator password (the
accounting deployment, mode new), the cluster's AccountingPassword parameter (hpclz-cluster-sync reads it from Key
Vault and re-imports the cluster when the secret gets a new version) and, in clear, `StoragePass=` in
/sched/<cluster>/slurmdbd.conf on the scheduler. cyclecloud-slurm writes that file once, at cluster-init
(Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py l.366-449, `_accounting_primary`), and a cluster-init
script does not run again on a later converge ("When a cluster-init script runs successfully, it places a file in
/mnt/cluster-init/.run/(project)/(spec) to ensure the script doesn't run again on a subsequent converge",
learn.microsoft.com/azure/cyclecloud/how-to/projects), so after a rotation slurmdbd would sign in with the old one.

So once the deployments succeeded, deploy runs templates/run-command/slurmdbd_storagepass.py on the scheduler VM (the
VM CycleCloud tagged as the cluster's `scheduler`, hpclz.azure.run_command.find_scheduler's tags) as a managed Run
Command, the new value in a protected parameter: it rewrites only StoragePass=, keeps the file's owner, group and mode,
and restarts slurmdbd only when the file changed. No identity gains a secret: the value comes from the engineer who
deploys (who sets it), and reaches only the VM that already holds it in that file.

State records "pending" before the run and drops it after it succeeded, so a run that failed or was interrupted is
repeated by the next deploy although the secret's fingerprint no longer differs. Without a scheduler VM (the cluster
not started) there is no slurmdbd.conf to rewrite: the scheduler CycleCloud starts later runs cluster-init with the
re-imported parameter.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from typing import Any

from hpclz.deploy.runner import Event, Step
from hpclz.errors import ExitCode, HpclzError
from hpclz.package_data import templates_dir
from hpclz.plan.changeset import ChangeSet
from hpclz.plan.contract import ROTATED_ACCOUNTING
from hpclz.render.model import DeploymentPlan
from hpclz.render.zone import Zone
from hpclz.state.model import StateDocument

PENDING = "accounting.slurmdbdStoragePass"  # state output: "pending" while slurmdbd may hold an older password
ROW = "slurmdbd password"  # its row in deploy's progress
RUN_NAME = "hpclz-slurmdbd-storagepass"
ENV = "HPCLZ_STORAGE_PASS"  # the protected parameter, as the program reads it
TIMEOUT_S = 300  # a file rewrite and a slurmdbd restart
# HPCLZ_SCHED_DIR: a test's folder in place of the VM's /sched (the Run Command stand-in runs the script here).
SCHED = "${HPCLZ_SCHED_DIR:-/sched}"


def program() -> str:
    return (templates_dir() / "run-command" / "slurmdbd_storagepass.py").read_text(encoding="utf-8")


def script(slurm_cluster: str) -> str:
    """The Run Command's script: the program on python3's standard input, the file's path its one argument.
    cyclecloud-slurm keeps the file under /sched/<its safe cluster name> (install.py l.139)."""
    conf = f'"{SCHED}"/{shlex.quote(slurm_cluster)}/slurmdbd.conf'
    return f"set -eu\npython3 - {conf} <<'HPCLZ_EOF'\n{program()}HPCLZ_EOF\n"


def rotated(changes: ChangeSet) -> bool:
    """Whether this run writes a rotated accounting password (attach_rotations marks it with its own verdict)."""
    return any(c.verdict == ROTATED_ACCOUNTING for c in changes.config_changes)


def password(plan: DeploymentPlan, secrets: Mapping[str, Mapping[str, str]], path: str | None) -> str | None:
    """The value deploy resolved for the accounting secret's path, from whichever deployment carries it."""
    for d in plan.deployments:
        for parameter, carried in d.secure_parameters.items():
            value = secrets.get(d.name, {}).get(parameter)
            if carried == path and value is not None:
                return value
    return None


class StoragePass:
    """After the deployments: slurmdbd.conf on the scheduler given the rotated password, or state left "pending"."""

    def __init__(
        self,
        zone: Zone,
        value: str | None,
        changes: ChangeSet,
        emit: Callable[[Event], None],
    ) -> None:
        self.zone = zone
        self.value = value
        self.changes = changes
        self.emit = emit

    def finish(self, clients: Any, doc: StateDocument, save: Callable[[StateDocument], StateDocument]) -> StateDocument:
        if self.value is None or not (rotated(self.changes) or doc.outputs.get(PENDING) == "pending"):
            return doc
        doc = save(doc.model_copy(update={"outputs": {**doc.outputs, PENDING: "pending"}}))
        vm_id = self._scheduler(clients)
        if vm_id is None:
            self.emit(
                Event(ROW, Step.SKIPPED, "no scheduler VM: the one CycleCloud starts reads the re-imported value")
            )
        else:
            self._rewrite(clients, vm_id)
        return save(doc.model_copy(update={"outputs": {k: v for k, v in doc.outputs.items() if k != PENDING}}))

    def _scheduler(self, clients: Any) -> str | None:
        """The scheduler VM; None when CycleCloud has not made one (more than one: find_scheduler's error)."""
        from hpclz.azure.run_command import find_scheduler, tagged_nodes
        from hpclz.azure.scheduler import CYCLECLOUD_SCHEDULER
        from hpclz.render.cloudinit import cluster_name

        where = (self.zone.rg["compute"], cluster_name(self.zone), CYCLECLOUD_SCHEDULER)
        if not tagged_nodes(clients, *where):
            return None
        return find_scheduler(clients, *where)

    def _rewrite(self, clients: Any, vm_id: str) -> None:
        from hpclz.azure.run_command import run_inline
        from hpclz.render.cloudinit import slurm_cluster_name

        assert self.value is not None
        vm = vm_id.rsplit("/", 1)[-1]
        self.emit(Event(ROW, Step.SUBMITTED, f"rewriting StoragePass in slurmdbd.conf on {vm} (managed Run Command)"))
        outcome = run_inline(
            clients,
            vm_id,
            RUN_NAME,
            script(slurm_cluster_name(self.zone)),
            timeout_s=TIMEOUT_S,
            progress=lambda _m: None,
            protected={ENV: self.value},
        )
        said = (outcome.stderr or outcome.stdout or outcome.message).strip().splitlines()
        last = said[-1] if said else f"run command {RUN_NAME} ended {outcome.state}"
        if outcome.state.lower() != "succeeded" or outcome.exit_code != 0:
            self.emit(Event(ROW, Step.FAILED, last))
            raise HpclzError(
                f"slurmdbd on {vm} still has the old accounting password ({last}); Key Vault and the MySQL server "
                "hold the new one: run `hpclz deploy` again",
                exit_code=ExitCode.AZURE_ERROR,
            )
        self.emit(Event(ROW, Step.SUCCEEDED, last))
