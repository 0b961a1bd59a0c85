"""Run a script on one VM through managed Run Commands, its output streams written to blobs the CLI then reads.

Why managed rather than action Run Commands: the action API (`virtual_machines.begin_run_command`) returns only
the last 4096 bytes of output ("Run scripts in your Linux VM by using action Run Commands", Restrictions:
https://learn.microsoft.com/azure/virtual-machines/linux/run-command), too little for a verify report of many
nodes. Managed Run Commands (https://learn.microsoft.com/azure/virtual-machines/linux/run-command-managed)
upload the whole stdout and stderr to `outputBlobUri` / `errorBlobUri` (a SAS URI with read, append, create and
write access) and expose progress as `instanceView.executionState` on GET with `$expand=instanceView`
(azure-rest-api-specs, ComputeRP `VirtualMachineRunCommandInstanceView`: Unknown, Pending, Running, Failed,
Succeeded, TimedOut, Canceled). Linux parameters reach the script as environment variables (the managed
Run Commands page, "parameters").
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hpclz.azure.clients import AzureClients, blob_service_client
from hpclz.azure.errors import azure_errors
from hpclz.errors import ExitCode, HpclzError

# CycleCloud tags every node VM with ClusterName, and head nodes with Name (the node's name in the cluster):
# https://learn.microsoft.com/azure/cyclecloud/how-to/tag-nodes
CLUSTER_TAG = "ClusterName"
NODE_TAG = "Name"
FINISHED = {"succeeded", "failed", "timedout", "canceled"}
SAS_MARGIN_S = 3600  # past the run's own limit and hpclz's wait for it: reading the blobs back comes after
LATE_S = 300  # past its own timeoutInSeconds, the agent should have reported TimedOut: stop waiting then


@dataclass(frozen=True)
class RunOutcome:
    state: str  # the instance view's executionState
    exit_code: int | None
    stdout: str
    stderr: str
    message: str = ""


def tagged_nodes(clients: AzureClients, resource_group: str, cluster: str, node: str = "scheduler") -> list[str]:
    """The resource IDs of the VMs CycleCloud tagged as `node` of `cluster` in `resource_group`: none, one or more."""
    with azure_errors(f"list VMs in {resource_group}"):
        vms = [vm for vm in clients.compute.virtual_machines.list(resource_group)]
    tagged = [vm for vm in vms if (vm.tags or {}).get(CLUSTER_TAG) == cluster]
    return [str(vm.id) for vm in tagged if (vm.tags or {}).get(NODE_TAG) == node]


def find_scheduler(clients: AzureClients, resource_group: str, cluster: str, node: str = "scheduler") -> str:
    """The resource ID of the VM CycleCloud tagged as `node` of `cluster` in `resource_group`."""
    found = tagged_nodes(clients, resource_group, cluster, node)
    if len(found) == 1:
        return str(found[0])
    what = f"VM tagged {CLUSTER_TAG}={cluster} {NODE_TAG}={node} in resource group {resource_group}"
    raise HpclzError(
        f"{'no' if not found else 'more than one'} {what}",
        exit_code=ExitCode.USAGE,
        hint="is the cluster started in CycleCloud? name the VM with --scheduler VM_RESOURCE_ID",
    )


def split_vm_id(vm_id: str) -> tuple[str, str, str]:
    """(subscription, resource group, VM name) of a VM's resource ID; one error line when it is not one."""
    parts = vm_id.strip("/").split("/")
    if len(parts) != 8 or [p.lower() for p in parts[0::2]] != [
        "subscriptions",
        "resourcegroups",
        "providers",
        "virtualmachines",
    ]:
        raise HpclzError(
            f"--scheduler {vm_id}: not a VM resource ID "
            "(/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Compute/virtualMachines/NAME)",
            exit_code=ExitCode.USAGE,
        )
    if parts[5].lower() != "microsoft.compute":
        raise HpclzError(f"--scheduler {vm_id}: not a Microsoft.Compute VM", exit_code=ExitCode.USAGE)
    return parts[1], parts[3], parts[7]


class OutputBlobs:
    """A fresh pair of blobs for one run's stdout and stderr, with SAS URIs the VM's agent may append to."""

    def __init__(
        self, account_url: str, container: str, connection_string: str | None, credential: Any, valid_s: int = 3 * 3600
    ):
        self.valid_s = valid_s + LATE_S + SAS_MARGIN_S  # the agent appends until the run ends, then hpclz reads
        self.service = blob_service_client(account_url, connection_string=connection_string, credential=credential)
        self.container = self.service.get_container_client(container)
        self.prefix = f"verify-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"

    def uris(self) -> tuple[str, str]:
        from azure.core.exceptions import ResourceExistsError

        with azure_errors(f"create blob container {self.container.container_name}"):
            with contextlib.suppress(ResourceExistsError):
                self.container.create_container()
            return self._sas(f"{self.prefix}/stdout.txt"), self._sas(f"{self.prefix}/stderr.txt")

    def _sas(self, name: str) -> str:
        from azure.storage.blob import BlobSasPermissions, generate_blob_sas

        blob = self.container.get_blob_client(name)
        expiry = datetime.now(UTC) + timedelta(seconds=self.valid_s)
        permission = BlobSasPermissions(read=True, add=True, create=True, write=True)
        key = self.service.credential
        if getattr(key, "account_key", None):  # an account key (Azurite, or a connection string)
            token = generate_blob_sas(
                blob.account_name,
                blob.container_name,
                name,
                account_key=key.account_key,
                permission=permission,
                expiry=expiry,
            )
        else:  # Entra ID: a user delegation SAS, so no account key is ever needed
            delegation = self.service.get_user_delegation_key(datetime.now(UTC) - timedelta(minutes=5), expiry)
            token = generate_blob_sas(
                blob.account_name,
                blob.container_name,
                name,
                user_delegation_key=delegation,
                permission=permission,
                expiry=expiry,
            )
        return f"{blob.url}?{token}"

    def read(self, which: str) -> str:
        from azure.core.exceptions import ResourceNotFoundError

        with azure_errors(f"read the run command's {which}"):
            try:
                data = self.container.get_blob_client(f"{self.prefix}/{which}.txt").download_blob().readall()
            except ResourceNotFoundError:
                return ""  # the agent writes a stream's blob only once there is something in it
        return bytes(data).decode("utf-8", "replace")


def run_script(
    clients: AzureClients,
    vm_id: str,
    script: str,
    blobs: OutputBlobs,
    *,
    env: dict[str, str],
    timeout_s: int,
    progress: Callable[[str], None],
) -> RunOutcome:
    """Create a managed run command on the VM, follow its instance view until it ends, read its blobs, delete it."""
    _sub, group, vm = split_vm_id(vm_id)
    name = f"hpclz-{blobs.prefix}"
    out_uri, err_uri = blobs.uris()
    body = {
        "location": _location(clients, group, vm),
        "properties": {
            "source": {"script": script},
            "parameters": [{"name": k, "value": v} for k, v in env.items()],
            "asyncExecution": True,  # the PUT returns once accepted; progress comes from the instance view
            "timeoutInSeconds": timeout_s,
            "outputBlobUri": out_uri,
            "errorBlobUri": err_uri,
        },
    }
    view = _create_follow_delete(clients, (group, vm, name), body, progress, timeout_s + LATE_S)
    return RunOutcome(
        state=_text(view.execution_state),
        exit_code=view.exit_code,
        stdout=blobs.read("stdout"),
        stderr=blobs.read("stderr"),
        message=str(view.execution_message or ""),
    )


def _create_follow_delete(
    clients: AzureClients,
    where: tuple[str, str, str],
    body: dict[str, Any],
    progress: Callable[[str], None],
    limit_s: float,
) -> Any:
    """Create the run command, follow it to its end, and delete it whatever happened. A create that failed may still
    have left the resource behind (a long-running PUT can fail after ARM accepted it), so the delete is tried then
    too; when both fail, the first error is the one reported, since it says why the run did not happen."""
    group, vm, name = where
    commands = clients.compute.virtual_machine_run_commands
    try:
        with azure_errors(f"start the run command {name} on {vm}"):
            commands.begin_create_or_update(group, vm, name, body).result()
        view = _follow(commands, where, progress, clients.settings.poll_interval, limit_s)
    except BaseException:
        with contextlib.suppress(HpclzError), azure_errors(f"delete the run command {name} on {vm}"):
            commands.begin_delete(group, vm, name).result()
        raise
    with azure_errors(f"delete the run command {name} on {vm}"):
        commands.begin_delete(group, vm, name).result()
    return view


def _location(clients: AzureClients, group: str, vm: str) -> str:
    with azure_errors(f"read VM {vm}"):
        return str(clients.compute.virtual_machines.get(group, vm).location)


def _follow(
    commands: Any, where: tuple[str, str, str], progress: Callable[[str], None], poll_s: float, limit_s: float
) -> Any:
    """The instance view once it reached a final state (attributes: the SDK's model, whatever its dict form)."""
    group, vm, name = where
    last = None
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        with azure_errors(f"read the run command {name} on {vm}"):
            found = commands.get_by_virtual_machine(group, vm, name, expand="instanceView")
        view = found.instance_view
        state = _text(getattr(view, "execution_state", None)) or "Pending"
        if state != last:
            progress(f"run command on {vm}: {state}")
            last = state
        if state.lower() in FINISHED:
            return view
        time.sleep(poll_s)
    raise HpclzError(
        f"the run command on {vm} did not finish within {limit_s:.0f} s (last state: {last})",
        exit_code=ExitCode.AZURE_ERROR,
    )


def _text(value: Any) -> str:
    """An SDK enum's wire value (str() of one gives `ExecutionState.RUNNING`), or the string itself."""
    return str(getattr(value, "value", value) or "")


def run_inline(
    clients: AzureClients,
    vm_id: str,
    name: str,
    script: str,
    *,
    timeout_s: int,
    progress: Callable[[str], None],
    protected: dict[str, str] | None = None,
) -> RunOutcome:
    """A short managed run command whose output fits the instance view (its last 4 KB: "Output and error fields in
    `instanceView` is limited to last 4KB", the managed Run Commands page): created under `name`, followed to its
    end, then deleted, whatever happened. A name reused after an interrupted run replaces that run's command.
    `protected`: protectedParameters, which reach the script as environment variables and which ARM never returns
    (the managed Run Commands page, "protectedParameters"): a secret travels there, never in the script."""
    _sub, group, vm = split_vm_id(vm_id)
    properties: dict[str, Any] = {"source": {"script": script}, "asyncExecution": True, "timeoutInSeconds": timeout_s}
    if protected:
        properties["protectedParameters"] = [{"name": k, "value": v} for k, v in sorted(protected.items())]
    body = {"location": _location(clients, group, vm), "properties": properties}
    view = _create_follow_delete(clients, (group, vm, name), body, progress, timeout_s + LATE_S)
    return RunOutcome(
        state=_text(view.execution_state),
        exit_code=view.exit_code,
        stdout=str(view.output or ""),
        stderr=str(view.error or ""),
        message=str(view.execution_message or ""),
    )
