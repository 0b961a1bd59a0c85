"""Azure's size limits, measured on what render produced: every VM's customData and userData, every template.

Limits and their sources:
- customData: 65,535 bytes before base64 (Microsoft.Compute OSProfile.customData), `CUSTOM_DATA_LIMIT`;
- userData: 64 KB of base64 (learn.microsoft.com/azure/virtual-machines/user-data, "the size can't exceed 64 KB"),
  `USER_DATA_LIMIT`;
- a template: "Limit the size of your template to 4 MB, and each resource definition to 1 MB ... 800 resources
  (including copy count)" (learn.microsoft.com/azure/azure-resource-manager/templates/best-practices, "Template
  limits"). ARM measures the expanded template; hpclz's templates carry their payloads inline, so the rendered JSON
  is what is measured here.
- each node's CloudInit script in the cluster template the CycleCloud server's userData carries: CycleCloud hands it
  to the node's cloud-init (learn.microsoft.com/azure/cyclecloud/how-to/cloud-init), so it rides in the node VM's own
  customData, `CUSTOM_DATA_LIMIT`, beside whatever CycleCloud adds there (its size is not published): measured as
  shipped (hpclz.render.shipped), uncompressed, `node_scripts`.
Render reports each one with its headroom and refuses a plan that goes over any of them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

from hpclz.errors import ExitCode, HpclzError
from hpclz.render.cloudinit import CUSTOM_DATA_LIMIT, USER_DATA_LIMIT
from hpclz.render.model import DeploymentPlan
from hpclz.render.payload import unpack

TEMPLATE_BYTES = 4 * 1024 * 1024
RESOURCE_BYTES = 1024 * 1024
TEMPLATE_RESOURCES = 800
TEMPLATE_LIMITS = "https://learn.microsoft.com/azure/azure-resource-manager/templates/best-practices"


class LimitUse(BaseModel):
    """One measured payload or template against its Azure limit."""

    what: str = Field(description="e.g. compute vm-energy-cc-prod-scus userData")
    used: int
    limit: int
    unit: str = Field(description="bytes, base64 characters or resources")
    compressed: bool = Field(default=False, description="The payload is compressed to fit.")
    codec: str | None = Field(default=None, description="gzip or xz, when compressed.")
    uncompressed: int | None = Field(default=None, description="Bytes before compression, when compressed.")

    @property
    def headroom_pct(self) -> float:
        return round(100.0 * (self.limit - self.used) / self.limit, 1)

    @property
    def over(self) -> bool:
        return self.used > self.limit

    def line(self) -> str:
        packed = f", {self.codec} of {self.uncompressed:,} bytes" if self.compressed and self.uncompressed else ""
        return f"{self.what}: {self.used:,} of {self.limit:,} {self.unit} ({self.headroom_pct:.1f} % headroom{packed})"


def _payload(what: str, encoded: str, *, custom: bool) -> LimitUse:
    unpacked = unpack(encoded)
    compressed = unpacked is not None and unpacked.compressed
    codec = unpacked.codec if unpacked is not None else None
    uncompressed = len(unpacked.data) if unpacked is not None and compressed else None
    if custom:
        return LimitUse(
            what=f"{what} customData",
            # A literal that is not base64 is measured as it stands: Azure counts at most that many decoded bytes.
            used=unpacked.sent if unpacked is not None else len(encoded.encode()),
            limit=CUSTOM_DATA_LIMIT,
            unit="bytes",
            compressed=compressed,
            codec=codec,
            uncompressed=uncompressed,
        )
    return LimitUse(
        what=f"{what} userData",
        used=len(encoded),
        limit=USER_DATA_LIMIT,
        unit="base64 characters",
        compressed=compressed,
        codec=codec,
        uncompressed=uncompressed,
    )


SECTION = re.compile(r"^\s*\[\[(?:node|nodearray) ([^\]]+)\]\]\s*$", re.MULTILINE)
CLOUD_INIT = re.compile(r"CloudInit = '''(.*?)'''", re.S)


def node_scripts(where: str, encoded_user_data: str) -> list[LimitUse]:
    """Each node and nodearray's CloudInit script in the cluster template a CycleCloud server's userData carries (the
    `hpclz-cyclecloud-cluster` document, hpclz.render.cloudinit.user_data_document), in bytes against customData's
    limit; nothing for any other userData."""
    unpacked = unpack(encoded_user_data)
    try:
        document = json.loads(unpacked.data) if unpacked is not None else None
    except ValueError:
        return []
    if not isinstance(document, dict) or document.get("kind") != "hpclz-cyclecloud-cluster":
        return []
    template = str(document.get("template", ""))
    heads = list(SECTION.finditer(template))
    uses = []
    for head, following in zip(heads, [*heads[1:], None], strict=True):
        section = template[head.end() : following.start() if following else len(template)]
        script = CLOUD_INIT.search(section)
        if script:
            uses.append(
                LimitUse(
                    what=f"{where} node {head.group(1)} CloudInit",
                    used=len(script.group(1).encode()),
                    limit=CUSTOM_DATA_LIMIT,
                    unit="bytes",
                )
            )
    return uses


def _literal(value: Any) -> str | None:
    """A rendered literal; an ARM expression (`[...]`) is resolved at deploy time and not measured here."""
    return value if isinstance(value, str) and value and not value.startswith("[") else None


def _copies(resource: dict[str, Any]) -> int:
    count = (resource.get("copy") or {}).get("count", 1)
    return count if isinstance(count, int) else 1


def measure(plan: DeploymentPlan) -> list[LimitUse]:
    uses: list[LimitUse] = []
    for d in plan.deployments:
        resources = d.resources()
        text = json.dumps(d.template, sort_keys=True)
        uses.append(
            LimitUse(what=f"{d.component} template", used=len(text.encode()), limit=TEMPLATE_BYTES, unit="bytes")
        )
        uses.append(
            LimitUse(
                what=f"{d.component} template",
                used=sum(_copies(r) for r in resources),
                limit=TEMPLATE_RESOURCES,
                unit="resources",
            )
        )
        largest = max(resources, key=lambda r: len(json.dumps(r)), default=None)
        if largest is not None:
            uses.append(
                LimitUse(
                    what=f"{d.component} largest resource ({largest.get('type')})",
                    used=len(json.dumps(largest, sort_keys=True).encode()),
                    limit=RESOURCE_BYTES,
                    unit="bytes",
                )
            )
        for r in resources:
            if r.get("type") != "Microsoft.Compute/virtualMachines":
                continue
            properties = r.get("properties") or {}
            where = f"{d.component} {r.get('name')}"
            custom = _literal((properties.get("osProfile") or {}).get("customData"))
            if custom:
                uses.append(_payload(where, custom, custom=True))
            user = _literal(properties.get("userData"))
            if user:
                uses.append(_payload(where, user, custom=False))
                uses.extend(node_scripts(where, user))
    return uses


def check(uses: list[LimitUse]) -> None:
    """Refuse a plan Azure would refuse: one line naming the first payload or template over its limit."""
    for use in uses:
        if use.over:
            raise HpclzError(
                f"{use.what} is {use.used:,} {use.unit}, over Azure's limit of {use.limit:,} "
                f"({TEMPLATE_LIMITS if 'template' in use.what or 'resource' in use.what else 'VM payload limit'})",
                exit_code=ExitCode.CONFIG_INVALID,
            )
