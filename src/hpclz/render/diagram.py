"""Pictures of a plan: the network and the cluster (hpclz.render.topology, `network.*`), and the deployments (one
box per deployment holding its resources, arrows for depends_on, `diagram.*`).

Mermaid and Graphviz DOT are text, written always; SVG and PNG only where Graphviz `dot` is installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from hpclz.config.root import LandingZoneConfig
from hpclz.render.model import DeploymentPlan
from hpclz.render.topology import NETWORK_STEM, network_files

DIAGRAM_STEM = "diagram"
IMAGE_FORMATS = ("svg", "png")
# Every file a diagram may leave behind, so a later render can remove them.
STEMS = (NETWORK_STEM, DIAGRAM_STEM)
DIAGRAM_FILES = tuple(f"{stem}.{fmt}" for stem in STEMS for fmt in ("mmd", "dot", *IMAGE_FORMATS))
# Children and glue resources would crowd the picture without telling a reader anything new.
_HIDDEN = ("Microsoft.Authorization/roleAssignments", "/virtualNetworkLinks", "/privateDnsZoneGroups", "/blobServices")


def _id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _shown(plan: DeploymentPlan) -> list[tuple[str, str, list[tuple[str, str]]]]:
    out = []
    for d in plan.deployments:
        items = []
        for r in d.resources():
            rtype = str(r.get("type", ""))
            if any(h in rtype for h in _HIDDEN):
                continue
            label = f"{rtype.split('/')[-1]}: {str(r.get('name', '')).split('/')[-1]}"
            items.append((_id(f"{d.component}_{r.get('name', '')}_{rtype}"), label))
        title = d.component + (f" ({d.resource_group})" if d.resource_group else " (subscription)")
        out.append((_id(d.name), title, items))
    return out


def mermaid(plan: DeploymentPlan) -> str:
    lines = ["flowchart TB"]
    for key, title, items in _shown(plan):
        lines.append(f'  subgraph {key}["{title}"]')
        lines += [f'    {rid}["{label}"]' for rid, label in items]
        lines.append("  end")
    for d in plan.deployments:
        lines += [f"  {_id(dep)} --> {_id(d.name)}" for dep in d.depends_on]
    return "\n".join(lines) + "\n"


def dot(plan: DeploymentPlan) -> str:
    lines = [
        f'digraph "{plan.landing_zone}" {{',
        # Left to right, each deployment's resources stacked in a column: a zone reads as a flow, not a ribbon.
        "  rankdir=LR;",
        "  ranksep=1.2;",
        "  compound=true;",
        '  node [shape=box, fontname="Helvetica"];',
    ]
    for key, title, items in _shown(plan):
        lines.append(f'  subgraph "cluster_{key}" {{')
        lines.append(f'    label="{title}";')
        lines.append(f'    "{key}" [shape=point, style=invis];')
        lines += [f'    "{rid}" [label="{label}"];' for rid, label in items]
        lines.append("  }")
    for d in plan.deployments:
        lines += [
            f'  "{_id(dep)}" -> "{_id(d.name)}" [ltail="cluster_{_id(dep)}", lhead="cluster_{_id(d.name)}"];'
            for dep in d.depends_on
        ]
    lines.append("}")
    return "\n".join(lines) + "\n"


def diagram_files(plan: DeploymentPlan, config: LandingZoneConfig | None = None) -> dict[str, str]:
    """The deployments' picture, and with `config` the network and the cluster's."""
    files = {f"{DIAGRAM_STEM}.mmd": mermaid(plan), f"{DIAGRAM_STEM}.dot": dot(plan)}
    return {**(network_files(config, plan) if config is not None else {}), **files}


NO_GRAPHVIZ = (
    "diagram: SVG and PNG not drawn: Graphviz `dot` is not on PATH (install the graphviz package); "
    "the Mermaid (.mmd) and DOT files of the network and the deployments are written"
)


def images_note() -> str | None:
    """Why `--diagram` draws no image here, or None when it can."""
    return NO_GRAPHVIZ if shutil.which("dot") is None else None


def render_images(out_dir: Path) -> list[Path]:
    """SVG and PNG beside the DOT file diagram_files wrote, when Graphviz is installed; nothing otherwise."""
    exe = shutil.which("dot")
    if exe is None:
        return []
    made = []
    for stem in STEMS:
        dot_file = out_dir / f"{stem}.dot"
        if not dot_file.is_file():
            continue
        for fmt in IMAGE_FORMATS:
            target = dot_file.with_suffix(f".{fmt}")
            subprocess.run([exe, f"-T{fmt}", str(dot_file), "-o", str(target)], check=True, capture_output=True)
            made.append(target)
    return made
