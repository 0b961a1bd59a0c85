"""CycleCloud in the ARM stand-in: what CycleCloud does once the cluster is imported, under the identity it runs as.

The actor reads what hpclz rendered into the CycleCloud server's userData (the cluster template, its parameters, the
Azure account, the secret parameters), exactly as the server's hpclz-cluster-sync receives it, and derives every node
from the cluster template itself (never from a second list). Then, as CycleCloud:
- signs in as the identity the account names (AzureRMUseManagedIdentity: a token from the VM's metadata service):
  the user-assigned identity on its VM whose client ID or resource ID the account holds (LockerIdentity, which names
  the nodes' locker identity, aside); when the account names none, the token request names none, and the metadata
  service answers with the VM's system-assigned identity, or with its only user-assigned one when it has no
  system-assigned identity (learn.microsoft.com/entra/identity/managed-identities-azure-resources/how-to-use-vm-token);
- lists VM sizes and quota at subscription scope (Microsoft.Compute/skus/read: CycleCloud never fills
  Azure.MachineType without it, Azure/cyclecloud-slurm-workspace#345);
- uploads the cluster's projects to the locker (blob write in the account's RMStorageAccount/RMStorageContainer):
  the project userData names (`project_name`, at the release its `project` URL ends in), as hpclz-cluster-sync's
  `cyclecloud project upload` stores it under project.ini's name and version;
- reads the secret parameters from Key Vault with the identity each names (hpclz-cluster-sync, at import);
- refuses a node whose MachineType the subscription's resource SKUs do not offer in its region (SkuNotAvailable);
- creates each `[[node]]` as a VM with its NIC (and a managed disk per `[[[volume]]]`), and each `[[nodearray]]`
  as virtual machine scale sets of at most Azure.MaxScalesetSize VMs each (scale_sets below) ("`[[node]]`
  corresponds to Azure VM, `[[[volume]]]` corresponds to Azure Disk, and
  `[[[network-interface]]]` corresponds to Network Interface", MicrosoftDocs/azure-docs articles/cyclecloud/
  cluster-references/cluster-template-reference.md; "Standalone nodes are constructed from single VMs on Azure. Node
  arrays map to virtual machine scale sets", articles/cyclecloud/concepts/clusters.md), each with the node's
  `Tags.*` and `Azure.Identities`, in the subnet its SubnetId names (`<group>/<vnet>/<subnet>`), in the account's
  AzureResourceGroup;
- each created node's identities read the locker (blob read), as the nodes do at boot with LockerAuthMode
  ManagedIdentity;
- each node runs its cluster-init specs, those of `[[node defaults]]` first: a spec without the cyclecloud/ prefix
  is resolved only from the locker upload ("By default, projects are assumed to be stored in the locker already
  [...] Without cyclecloud/ in the cluster-init reference, CycleCloud expects you to upload the project manually",
  learn.microsoft.com/azure/cyclecloud/cluster-references/cluster-init-reference), and one whose project and version
  were never uploaded fails as CycleCloud reports it ("If you define a project on a node but it doesn't exist in the
  expected storage location, the node reports a Software Installation Failure to CycleCloud",
  learn.microsoft.com/azure/cyclecloud/how-to/projects). A `cyclecloud/` spec, which CycleCloud fetches from GitHub
  itself, is not modelled.
Every step passes the stand-in's authorization (real roles) and every write its policy assignments (real
definitions), and is refused as Azure would refuse it. Quota is not modelled.
"""

from __future__ import annotations

import base64
import gzip
import json
import lzma
import re
from dataclasses import dataclass, field
from typing import Any

from tests.support.arm_standin import policy, reach
from tests.support.arm_standin.authz import Authorization, Principal

COMPUTE = "microsoft.compute/virtualmachines"
IDENTITY = "microsoft.managedidentity/userassignedidentities"
_SECTION = re.compile(r"^\s*\[\[(node|nodearray)\s+([^\]]+)\]\]\s*$")
_SUB_SECTION = re.compile(r"^\s*\[\[\[(\w+)\s*([^\]]*)\]\]\]\s*$")
_SETTING = re.compile(r"^\s*([A-Za-z][\w.]*)\s*=\s*(.*)$")
_CLUSTER_INIT = re.compile(r"^\s*\[\[\[cluster-init\s+([^\]\s]+)\s*\]\]\]\s*$")
# CycleCloud's code for a spec it cannot find in the locker (learn.microsoft.com/azure/cyclecloud/how-to/projects).
SOFTWARE_INSTALLATION_FAILURE = "SoftwareInstallationFailure"


@dataclass
class NodeSpec:
    """One `[[node]]` or `[[nodearray]]` of the cluster template, with what it inherits from `[[node defaults]]`."""

    name: str
    kind: str  # node | nodearray
    settings: dict[str, str] = field(default_factory=dict)
    volumes: list[str] = field(default_factory=list)
    cluster_init: list[str] = field(default_factory=list)

    @property
    def tags(self) -> dict[str, str]:
        return {k[len("Tags.") :]: v for k, v in self.settings.items() if k.startswith("Tags.")}

    @property
    def identities(self) -> list[str]:
        return [i.strip() for i in self.settings.get("Azure.Identities", "").split(",") if i.strip()]


def parse_cluster(template: str, parameters: dict[str, Any]) -> list[NodeSpec]:
    """The nodes and nodearrays of a CycleCloud cluster template, `$Parameter` values filled from `parameters`; a
    multi-line `'''` value (CloudInit) is skipped whole."""
    defaults: dict[str, str] = {}
    default_specs: list[str] = []
    nodes: list[NodeSpec] = []
    current: NodeSpec | None = None
    in_defaults = in_sub = False
    lines = iter(template.splitlines())
    for line in lines:
        section = _SECTION.match(line)
        if section:
            kind, name = section.group(1), section.group(2).strip()
            in_defaults, in_sub = name == "defaults", False
            current = None if in_defaults else NodeSpec(name, kind)
            if current is not None:
                nodes.append(current)
            continue
        if _sub_section(line, default_specs if in_defaults else None, current):
            in_sub = True
            continue
        setting = _SETTING.match(line)
        if setting is None:
            continue
        key, raw = setting.groups()
        if raw.startswith("'''"):
            if "'''" not in raw[3:]:
                for rest in lines:
                    if "'''" in rest:
                        break
            continue
        if in_sub:
            continue
        value = _value(raw, parameters)
        if in_defaults:
            defaults[key] = value
        elif current is not None:
            current.settings[key] = value
    for node in nodes:
        node.settings = {**defaults, **node.settings}
        # Every node runs the defaults' specs, first (the example of learn.microsoft.com/azure/cyclecloud/
        # cluster-references/cluster-init-reference: "my-proj:default runs first because it comes from the" defaults).
        node.cluster_init = [*default_specs, *node.cluster_init]
    return nodes


def _sub_section(line: str, default_specs: list[str] | None, current: NodeSpec | None) -> bool:
    """Whether the line opens a `[[[...]]]` subsection; a cluster-init spec goes to the defaults' list (when given)
    or the current node's, a volume to the current node's volumes."""
    spec = _CLUSTER_INIT.match(line)
    if spec:
        if default_specs is not None:
            default_specs.append(spec.group(1))
        elif current is not None:
            current.cluster_init.append(spec.group(1))
        return True
    sub = _SUB_SECTION.match(line)
    if sub and sub.group(1) == "volume" and current is not None:
        current.volumes.append(sub.group(2).strip())
    return sub is not None


def _value(raw: str, parameters: dict[str, Any]) -> str:
    raw = raw.strip()
    if raw.startswith("$"):
        return str(parameters.get(raw[1:], raw))
    if raw.startswith('"'):
        return str(json.loads(raw))
    return raw


def user_data_document(vm: dict[str, Any]) -> dict[str, Any] | None:
    """The cluster document in a VM's userData (base64 of the JSON, xz- or gzip-compressed first), or None."""
    encoded = (vm.get("properties") or {}).get("userData")
    if not isinstance(encoded, str):
        return None
    raw = base64.b64decode(encoded)
    if raw[:6] == b"\xfd7zXZ\x00":  # the .xz stream header (The .xz File Format 1.0.4, 2.1.1.1)
        raw = lzma.decompress(raw)
    elif raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and doc.get("kind") == "hpclz-cyclecloud-cluster" else None


def uploaded_projects(doc: dict[str, Any]) -> set[tuple[str, str]]:
    """(name, version) of what hpclz-cluster-sync uploads from this userData: the project it names, at the release
    its URL ends in (templates/cloud-init/cluster_sync.py `fetched_project` refuses any other)."""
    name, source = str(doc.get("project_name", "")), str(doc.get("project", ""))
    return {(name, source.rstrip("/").rsplit("/", 1)[-1])} if name and source else set()


RESOURCE_ID = re.compile(r"^\[resourceId\('([^']+)',\s*'([^']+)',\s*'([^']+)'\)\]$")


@dataclass
class Step:
    """One thing CycleCloud did: what, on which resource, and Azure's refusal if it was refused."""

    node: str
    what: str
    target: str
    code: str = ""
    message: str = ""

    @property
    def refused(self) -> bool:
        return bool(self.code)


@dataclass
class CycleCloud:
    """The actor. `authorization` and `policy_log`: the stand-in's (ArmStandIn.proving)."""

    world: Any  # tests.support.arm_standin.world.World
    authorization: Authorization
    policy_log: policy.PolicyLog
    steps: list[Step] = field(default_factory=list)

    # ----- what the server was given -----
    def server(self) -> tuple[dict[str, Any], dict[str, Any]]:
        for r in self.world.resources.values():
            if str(r.get("type", "")).lower() == COMPUTE:
                doc = user_data_document(r)
                if doc is not None:
                    return r, doc
        raise AssertionError("no CycleCloud server with a cluster in its userData in the stand-in")

    def _sub(self, text: str) -> str:
        return text.replace("@SUBSCRIPTION_ID@", self.world.subscription_id)

    def orchestrator(self) -> Principal | None:
        """The identity the account names among the VM's user-assigned ones, else the system-assigned one; None
        when the VM has neither (then CycleCloud has no token at all)."""
        vm, doc = self.server()
        account = json.loads(self._sub(doc["account"]))
        named = {str(v).lower() for k, v in account.items() if k != "LockerIdentity" for v in _values(v)}
        # hpclz-cluster-sync fills these account fields from ARM before it creates the account
        # (templates/cloud-init/cluster_sync.py: account_lookups): AzureRMApplicationId becomes the clientId of the
        # identity the lookup names, which is how the account names that identity.
        lookups = json.loads(self._sub(doc.get("account_lookups") or "{}"))
        if "AzureRMApplicationId" in lookups:
            named.add(self._resolve(str(lookups["AzureRMApplicationId"]["identity"])).lower())
        identity = vm.get("identity") or {}
        attached = list(identity.get("userAssignedIdentities") or {})
        for rid in attached:
            found = self._identity_principal(rid)
            client = str(
                (self.world.resources.get(self._resolve(rid).lower()) or {}).get("properties", {}).get("clientId")
            )
            if found is not None and (self._resolve(rid).lower() in named or client.lower() in named):
                return found
        if "systemassigned" in str(identity.get("type", "")).lower() and identity.get("principalId"):
            return Principal(str(identity["principalId"]), kind="ServicePrincipal", name="system-assigned")
        return self._identity_principal(attached[0]) if len(attached) == 1 else None

    def _resolve(self, rid: str) -> str:
        # The VM's userAssignedIdentities keys are kept as the template wrote them: resourceId('group', 'type',
        # 'name') is /subscriptions/<sub>/resourceGroups/group/providers/type/name (learn.microsoft.com/azure/
        # azure-resource-manager/templates/template-functions-resource#resourceid).
        expression = RESOURCE_ID.match(rid)
        if expression:
            group, type_, name = expression.groups()
            rid = f"resourceGroups/{group}/providers/{type_}/{name}"
        return self._sub(rid) if rid.startswith("/") else self._sub("/subscriptions/@SUBSCRIPTION_ID@/" + rid)

    # ----- cluster start and scale-up -----
    def start(self, as_identity: Principal | None = None) -> list[Step]:
        """Cluster start with one node of every nodearray: returns the steps, refused ones included. `as_identity`
        overrides the account's identity (to test the roles apart from which identity the account names)."""
        self.steps = []
        who = as_identity or self.orchestrator()
        _vm, doc = self.server()
        account = json.loads(self._sub(doc["account"]))
        if who is None:
            self.steps.append(Step("cyclecloud", "sign in", "", "NoManagedIdentity", "the VM has no identity"))
            return self.steps
        sub = f"/subscriptions/{self.world.subscription_id}"
        self._act("cyclecloud", "list VM sizes", who, "Microsoft.Compute/skus/read", sub)
        server = reach.Origin(subnet=self.server_subnet(), name="CycleCloud server")
        locker = self._locker(account)
        uploaded: set[tuple[str, str]] = set()
        if locker:
            blob_write = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write"
            if self._act("cyclecloud", "upload projects to the locker", who, blob_write, locker, data=True,
                         origin=server):  # fmt: skip
                uploaded = uploaded_projects(doc)
        for name, spec in json.loads(doc.get("secret_parameters") or "{}").items():
            self._read_secret(name, spec, server)
        parameters = json.loads(self._sub(doc["parameters"]))
        for node in parse_cluster(self._sub(doc["template"]), parameters):
            before = len(self.steps)
            self._create(node, who, account, locker)
            # A node that was not built, or could not read the locker, never gets to its specs.
            if not any(s.refused for s in self.steps[before:]):
                self._run_cluster_init(node, locker, uploaded)
        return self.steps

    def _run_cluster_init(self, node: NodeSpec, locker: str | None, uploaded: set[tuple[str, str]]) -> None:
        """Each spec without the cyclecloud/ prefix, `<project>:<spec>:<version>`, from the locker's upload only."""
        for spec in node.cluster_init:
            if spec.startswith("cyclecloud/"):
                continue
            project, _spec, version = [*spec.split(":"), "", ""][:3]
            what = f"run cluster-init {spec}"
            if locker and (project, version) in uploaded:
                self.steps.append(Step(node.name, what, locker))
                continue
            why = f"project {project} version {version or '(none)'} was never uploaded to the locker"
            self.steps.append(Step(node.name, what, locker or "", SOFTWARE_INSTALLATION_FAILURE, why))

    def server_subnet(self) -> str | None:
        """The subnet of the CycleCloud server's NIC: where its data-plane calls come from."""
        vm, _doc = self.server()
        for ref in ((vm.get("properties") or {}).get("networkProfile") or {}).get("networkInterfaces", []):
            nic = self.world.resources.get(self._resolve(str(ref.get("id", ""))).lower()) or {}
            for config in (nic.get("properties") or {}).get("ipConfigurations", []):
                subnet = ((config.get("properties") or {}).get("subnet") or {}).get("id")
                if subnet:
                    return self._resolve(str(subnet))
        return None

    def _read_secret(self, name: str, spec: dict[str, Any], origin: reach.Origin) -> None:
        reader = self._identity_principal(str(spec.get("identity", "")))
        vault = self._find(str(spec.get("vault", "")), "microsoft.keyvault/vaults")
        target = f"{vault}/secrets/{spec.get('name', name)}"
        if reader is None:
            self.steps.append(Step("cyclecloud", f"read secret {name}", target, "NoManagedIdentity", spec["identity"]))
            return
        self._act("cyclecloud", f"read secret {name}", reader, "Microsoft.KeyVault/vaults/secrets/getSecret/action",
                  target, data=True, origin=origin)  # fmt: skip

    def _create(self, node: NodeSpec, who: Principal, account: dict[str, Any], locker: str | None) -> None:
        group = f"/subscriptions/{self.world.subscription_id}/resourceGroups/{account['AzureResourceGroup']}"
        cluster = "cc"
        base = {"location": node.settings.get("Region") or account.get("Location"), "tags": node.tags}
        subnet = self._subnet(node.settings.get("SubnetId", ""))
        self._act(node.name, "join the subnet", who, "Microsoft.Network/virtualNetworks/subnets/join/action", subnet)
        for identity in node.identities:
            self._act(node.name, "attach identity", who,
                      "Microsoft.ManagedIdentity/userAssignedIdentities/assign/action", self._resolve(identity))  # fmt: skip
        identity_body = {
            "type": "UserAssigned",
            "userAssignedIdentities": {self._resolve(i): {} for i in node.identities},
        }
        if not self._offered(node, str(base["location"])):
            return
        if node.kind == "nodearray":
            for vmss, size in scale_sets(
                node, f"{group}/providers/Microsoft.Compute/virtualMachineScaleSets/{cluster}"
            ):
                body = {
                    **base,
                    "identity": identity_body,
                    "sku": {"name": node.settings.get("MachineType"), "capacity": size},
                    "properties": {"subnet": subnet, "singlePlacementGroup": _flag(node, "Azure.SinglePlacementGroup")},
                }
                self._write(
                    node.name, "create the scale set", who, "Microsoft.Compute/virtualMachineScaleSets", vmss, body
                )
        else:
            nic = f"{group}/providers/Microsoft.Network/networkInterfaces/{cluster}-{node.name}-nic"
            self._write(node.name, "create the NIC", who, "Microsoft.Network/networkInterfaces", nic,
                        {**base, "properties": {"subnet": subnet}})  # fmt: skip
            for volume in node.volumes:
                disk = f"{group}/providers/Microsoft.Compute/disks/{cluster}-{node.name}-{volume}"
                self._write(node.name, f"create volume {volume}", who, "Microsoft.Compute/disks", disk,
                            {**base, "properties": {}})  # fmt: skip
            vm = f"{group}/providers/Microsoft.Compute/virtualMachines/{cluster}-{node.name}"
            self._write(node.name, "create the VM", who, "Microsoft.Compute/virtualMachines", vm,
                        {**base, "identity": identity_body, "properties": {"networkProfile": {"nic": nic}}})  # fmt: skip
        if locker:
            for identity in node.identities:
                reader = self._identity_principal(identity)
                if reader is not None and reader.name.lower().endswith(_locker_identity(account)):
                    self._act(node.name, "read the locker", reader,
                              "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read", locker, data=True,
                              origin=reach.Origin(subnet=subnet, name=node.name))  # fmt: skip

    def _offered(self, node: NodeSpec, location: str) -> bool:
        """CycleCloud builds a node only from a size the subscription's resource SKUs offer in the region (it lists
        them first, "list VM sizes"); a size the list lacks is refused as Azure refuses it (SkuNotAvailable)."""
        from tests.support.arm_standin.catalog import default_skus

        machine = node.settings.get("MachineType", "")
        skus = self.world.skus if self.world.skus is not None else default_skus(location)
        names = {str(s["name"]).lower() for s in skus if location.lower() in [x.lower() for x in s["locations"]]}
        if machine.lower() in names:
            return True
        why = f"The requested size {machine} is not available in location {location}"
        self.steps.append(Step(node.name, "choose the machine type", machine, "SkuNotAvailable", why))
        return False

    # ----- helpers -----
    def _act(
        self,
        node: str,
        what: str,
        who: Principal,
        action: str,
        target: str,
        data: bool = False,
        origin: reach.Origin | None = None,
    ) -> bool:
        """One step, refused as Azure would: a data-plane call first by the network between `origin` and the target
        (tests/support/arm_standin/reach.py: the firewall answers before anyone asks who the caller is), then by
        authorization."""
        blocked = reach.data_plane_refusal(target, origin, self.world.resources) if data and origin else None
        if blocked is not None:
            self.steps.append(Step(node, what, target, *blocked))
            return False
        refusal = self.authorization.check(who, action, target, self.world.resources, data=data)
        self.steps.append(Step(node, what, target, *((refusal.code, refusal.message) if refusal else ("", ""))))
        return refusal is None

    def _write(self, node: str, what: str, who: Principal, type_: str, rid: str, body: dict[str, Any]) -> None:
        if not self._act(node, what, who, f"{type_}/write", rid):
            return
        resource = {"id": rid, "name": rid.rsplit("/", 1)[-1], "type": type_, **body}
        refusal = policy.judge(resource, self.world.resources, self.policy_log)
        if refusal is not None:
            self.steps[-1] = Step(node, what, rid, refusal.code, refusal.message)
            return
        with self.world.lock:
            self.world.resources[rid.lower()] = resource

    def _locker(self, account: dict[str, Any]) -> str | None:
        name = account.get("RMStorageAccount")
        if not name:
            return None
        found = self._find(str(name), "microsoft.storage/storageaccounts")
        return f"{found}/blobServices/default/containers/{account.get('RMStorageContainer', 'cyclecloud')}"

    def _find(self, name: str, type_: str) -> str:
        """The ID of the resource of that type and name (a relative ID is resolved in the subscription)."""
        if "/" in name:
            return self._resolve(name)
        for r in self.world.resources.values():
            if str(r.get("type", "")).lower() == type_ and str(r.get("name", "")).lower() == name.lower():
                return str(r["id"])
        return f"/subscriptions/{self.world.subscription_id}/providers/{type_}/{name}"

    def _subnet(self, spec: str) -> str:
        group, vnet, subnet = [*spec.split("/"), "", "", ""][:3]
        return (
            f"/subscriptions/{self.world.subscription_id}/resourceGroups/{group}"
            f"/providers/Microsoft.Network/virtualNetworks/{vnet}/subnets/{subnet}"
        )

    def _identity_principal(self, rid: str) -> Principal | None:
        found = self.world.resources.get(self._resolve(rid).lower()) if rid else None
        if not found:
            return None
        return Principal(str(found["properties"]["principalId"]), kind="ServicePrincipal", name=self._resolve(rid))


# "Nodearray is a driver for Azure VirtualMachine ScaleSets (VMSS) and can have many backing VMSSs";
# Azure.MaxScaleSetSize: "Limit the number of VMs in a single VMSS. Once this maximum is reached, CycleCloud will add
# additional VMSS to cluster. (Default: `40`)"; Azure.SinglePlacementGroup "(Default: false)"
# (MicrosoftDocs/azure-docs@0821e41 articles/cyclecloud/cluster-references/node-nodearray-reference.md, Nodearray-
# Specific Attributes).
DEFAULT_SCALESET_SIZE = 40


def scale_sets(node: NodeSpec, prefix: str) -> list[tuple[str, int]]:
    """The scale sets backing a nodearray grown to MaxCount, each at most MaxScaleSetSize VMs: (ID, capacity). The
    stand-in creates them all at once; CycleCloud adds each as the array grows past the one before."""
    size = int(node.settings.get("Azure.MaxScalesetSize", DEFAULT_SCALESET_SIZE))
    total = int(node.settings.get("MaxCount", size))
    counts = [min(size, total - start) for start in range(0, total, size)] or [0]
    if len(counts) == 1:
        return [(f"{prefix}-{node.name}", counts[0])]
    return [(f"{prefix}-{node.name}-{i}", count) for i, count in enumerate(counts, start=1)]


def _flag(node: NodeSpec, key: str) -> bool:
    return node.settings.get(key, "false").lower() == "true"


def _locker_identity(account: dict[str, Any]) -> str:
    return str(account.get("LockerIdentity", "")).rsplit("/", 1)[-1].lower() or "\0"


def _values(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _values(v)]
    if isinstance(value, list):
        return [x for v in value for x in _values(v)]
    return [value] if isinstance(value, str) else []
