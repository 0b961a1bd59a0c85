"""VMs and managed Run Commands for the ARM stand-in: the script really runs, here, and its streams go to blobs.

Paths and shapes: azure-rest-api-specs, specification/compute/resource-manager/Microsoft.Compute/ComputeRP/stable/
2024-07-01/examples/runCommandExamples/VirtualMachineRunCommand_{CreateOrUpdate,Get,Delete}.json
(PUT/GET/DELETE .../virtualMachines/{vm}/runCommands/{name}; `$expand=instanceView` adds
`properties.instanceView` with executionState, exitCode, output, error, startTime, endTime). As on a Linux VM,
parameters and protected parameters reach the script as environment variables, and protected ones are never
returned (learn.microsoft.com/azure/virtual-machines/linux/run-command-managed). The VM's own environment
(`vm_env`) stands in for the scheduler: in tests, the local Slurm harness's client settings.
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.arm_standin.world import ArmError, World

VMS = r"/providers/microsoft\.compute/virtualmachines"
OUTPUT_LIMIT = 4096  # the instance view's output/error: the last 4 KiB, like action Run Commands' output
# "The maximum number of allowed Managed Run Commands is currently limited to 25."
# (learn.microsoft.com/azure/virtual-machines/run-command-overview, MicrosoftDocs/azure-compute-docs
# articles/virtual-machines/run-command-overview.md). The refusal's text as a user quoted it in
# github.com/MicrosoftDocs/azure-docs/issues/117976; its HTTP status and code are not quoted there (409 Conflict here).
MAX_RUN_COMMANDS = 25
TOO_MANY = (
    "The maximum number of managed Run commands (max={max}, current={current}) has been exceeded. Use fewer Run "
    "commands and retry the request."
)


@dataclass
class RunCommand:
    id: str
    name: str
    location: str
    body: dict[str, Any]
    state: str = "Pending"
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    start: str | None = None
    end: str | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def view(self, expand: bool) -> dict[str, Any]:
        props = {k: v for k, v in self.body.get("properties", {}).items() if k != "protectedParameters"}
        props["provisioningState"] = "Succeeded"
        if expand:
            props["instanceView"] = {
                "executionState": self.state,
                "executionMessage": "",
                "exitCode": self.exit_code,
                "output": self.stdout[-OUTPUT_LIMIT:],
                "error": self.stderr[-OUTPUT_LIMIT:],
                "startTime": self.start,
                "endTime": self.end,
            }
        return {
            "name": self.name,
            "id": self.id,
            "type": "Microsoft.Compute/virtualMachines/runCommands",
            "location": self.location,
            "properties": props,
        }


class VirtualMachines:
    """The VMs a test puts in a resource group (CycleCloud's, in production), and run commands on them."""

    def __init__(self, world: World):
        self.world = world
        self.subscription_id = world.subscription_id
        self.commands: dict[str, RunCommand] = {}
        self.vm_env: dict[str, str] = {}
        self.scripts: list[str] = []  # every script run, for tests to read what hpclz sent
        # The way from a VM to a blob URI, when a test puts the VM's output blobs behind a network
        # (data_planes.VmBlobRoutes): the URI the VM's agent then writes to. None: straight to the URI.
        self.blob_route: Callable[[dict[str, Any], str], str] | None = None
        self.unwritten: list[tuple[str, str]] = []  # (blob URI, storage error code) the agent could not write
        # How a value of `vm_env` reads from one VM (its network, its metadata service): each takes the VM and the value
        # and returns the value as that VM sees it (data_planes.VmBlobRoutes.route, imds.Imds.route).
        self.from_vm: list[Callable[[dict[str, Any], str], str]] = []
        # What happens to a script between hpclz and the VM's agent: None delivers it as sent; a test that wants a
        # piece damaged in transit sets a function of the script.
        self.in_transit: Callable[[str], str] | None = None
        self.most = 0  # the most run commands one VM held at once

    def add(self, rg: str, name: str, tags: dict[str, str], location: str = "eastus2") -> str:
        vm_id = f"/subscriptions/{self.subscription_id}/resourceGroups/{rg}/providers/Microsoft.Compute/virtualMachines/{name}"
        self.world.resources[vm_id.lower()] = {
            "id": vm_id,
            "name": name,
            "type": "Microsoft.Compute/virtualMachines",
            "location": location,
            "tags": tags,
            "properties": {
                "vmId": str(uuid.uuid4()),
                "provisioningState": "Succeeded",
            },
        }
        return vm_id

    def routes(self, rg: str) -> list[tuple[str, str, Callable[..., tuple[int, dict[str, str], Any]]]]:
        one = rg + VMS + r"/(?P<vm>[^/]+)"
        command = one + r"/runcommands/(?P<name>[^/]+)"
        return [
            ("GET", rg + VMS, self._list),  # one VM, GET or DELETE: the stand-in's generic resource routes
            ("PUT", command, self._put_command),
            ("GET", command, self._get_command),
            ("DELETE", command, self._delete_command),
        ]

    def _vm(self, rg: str, vm: str) -> dict[str, Any]:
        prefix = (
            f"/subscriptions/{self.subscription_id}/resourcegroups/{rg}/providers/microsoft.compute/virtualmachines/"
        )
        found = self.world.resources.get((prefix + vm).lower())
        if found is None:
            raise ArmError(
                404,
                "ResourceNotFound",
                f"The Resource 'Microsoft.Compute/virtualMachines/{vm}' under resource group '{rg}' was not found.",
            )
        return found

    def _list(self, body: Any, path: str, sub: str, rg: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        return 200, {}, {"value": self.vms(rg)}

    def vms(self, rg: str) -> list[dict[str, Any]]:
        """Every VM in the group: those a test added and those a deployment created."""
        return [
            r
            for r in self.world.resources_in(rg)
            if str(r.get("type", "")).lower() == "microsoft.compute/virtualmachines"
        ]

    def _put_command(
        self, body: Any, path: str, sub: str, rg: str, vm: str, name: str, **_: Any
    ) -> tuple[int, dict[str, str], Any]:
        host = self._vm(rg, vm)
        key = path.lower()
        if key in self.commands and not self.commands[key].done.is_set():
            raise ArmError(409, "Conflict", f"Run command {name} is still running.")
        held = [k for k in self.commands if k.startswith(key.rsplit("/runcommands/", 1)[0] + "/runcommands/")]
        if key not in self.commands and len(held) >= MAX_RUN_COMMANDS:
            raise ArmError(409, "Conflict", TOO_MANY.format(max=MAX_RUN_COMMANDS, current=len(held)))
        self.most = max(self.most, len(held) + (key not in self.commands))
        run = RunCommand(
            id=host["id"] + f"/runCommands/{name}", name=name, location=body.get("location", ""), body=body
        )
        self.commands[key] = run
        threading.Thread(target=self._execute, args=(run, host), daemon=True).start()
        if not body.get("properties", {}).get("asyncExecution"):
            run.done.wait()
        return 201, {}, run.view(expand=False)

    def _get_command(
        self, body: Any, path: str, sub: str, rg: str, vm: str, name: str, query: dict[str, list[str]], **_: Any
    ) -> tuple[int, dict[str, str], Any]:
        run = self.commands.get(path.lower())
        if run is None:
            raise ArmError(404, "ResourceNotFound", f"Run command {name} was not found.")
        return 200, {}, run.view(expand="instanceView" in query.get("$expand", []))

    def _delete_command(
        self, body: Any, path: str, sub: str, rg: str, vm: str, name: str, **_: Any
    ) -> tuple[int, dict[str, str], Any]:
        run = self.commands.pop(path.lower(), None)
        return (200 if run else 204), {}, None

    def _execute(self, run: RunCommand, host: dict[str, Any]) -> None:
        props = run.body.get("properties", {})
        params = [*props.get("parameters", []), *props.get("protectedParameters", [])]
        env = {
            **{k: self._seen_from(host, v) for k, v in self.vm_env.items()},
            **{p["name"]: p["value"] for p in params},
        }
        script = props.get("source", {}).get("script", "")
        self.scripts.append(script)
        if self.in_transit is not None:
            script = self.in_transit(script)
        run.state, run.start = "Running", _now()
        # The script goes to bash as a file, so the stand-in adds no size limit of its own: Learn's Run Command pages
        # state none for an inline script (linux/run-command.md "Restrictions", linux/run-command-managed.md).
        with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False, encoding="utf-8") as handle:
            handle.write(script)
        try:
            done = subprocess.run(
                ["bash", handle.name],
                env=env,
                capture_output=True,
                text=True,
                timeout=props.get("timeoutInSeconds") or 5400,
            )
            run.stdout, run.stderr, run.exit_code = done.stdout, done.stderr, done.returncode
            final = "Succeeded" if done.returncode == 0 else "Failed"
        except subprocess.TimeoutExpired:
            final = "TimedOut"
        finally:
            Path(handle.name).unlink()
        for uri, text in ((props.get("outputBlobUri"), run.stdout), (props.get("errorBlobUri"), run.stderr)):
            if uri and text:
                self._write_stream(host, uri, text)
        run.end = _now()
        run.state = final  # only once the blobs hold everything: a client reads them when it sees this
        run.done.set()

    def _seen_from(self, host: dict[str, Any], value: str) -> str:
        for route in self.from_vm:
            value = route(host, value)
        return value

    def _write_stream(self, host: dict[str, Any], uri: str, text: str) -> None:
        """The agent writes from the VM, so through the VM's network. What it reports when the storage account refuses
        it is not documented; here the blob is simply not there (and the refusal is kept for the test)."""
        from azure.core.exceptions import HttpResponseError

        try:
            _append(self.blob_route(host, uri) if self.blob_route else uri, text)
        except HttpResponseError as exc:
            code = getattr(exc, "error_code", None)
            self.unwritten.append((uri, str(getattr(code, "value", code))))


def _append(uri: str, text: str) -> None:
    """What the Run Command agent does with a SAS URI: create an append blob and append the stream to it."""
    from azure.storage.blob import BlobClient

    blob = BlobClient.from_blob_url(uri)
    blob.create_append_blob()
    data = text.encode()
    for start in range(0, len(data), 4 << 20):  # an append block holds at most 4 MiB
        blob.append_block(data[start : start + (4 << 20)])


def _now() -> str:
    return datetime.now(UTC).isoformat()
