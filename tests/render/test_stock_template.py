"""The rendered cluster keeps what cyclecloud-slurm 4.0.9's stock template declares.

The facts (sections, settings, cluster-init specs at the pinned release) live in
tests/fixtures/cyclecloud-slurm/stock-template-4.0.9.json with their provenance and lines; `missing` lists every
one a rendered template drops, and a preset that drops one fails here.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

import pytest

from hpclz.catalog.versions import CURRENT
from hpclz.render.cloudinit import SLURM_PROJECT
from tests.conftest import REPO
from tests.render.conftest import preset_plan

FACTS: dict[str, Any] = json.loads(
    (REPO / "tests" / "fixtures" / "cyclecloud-slurm" / "stock-template-4.0.9.json").read_text(encoding="utf-8")
)
PRESETS = sorted(p.stem for p in (REPO / "configs").glob("*.yaml"))
SECTION = re.compile(r"^\s*\[\[(node|nodearray) ([^\]]+)\]\]\s*$")
SUBSECTION = re.compile(r"^\s*\[\[\[([^\]]+)\]\]\]\s*$")
ASSIGNMENT = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.]*)\s*=\s*(.*?)\s*$")


class Section:
    def __init__(self) -> None:
        self.attributes: dict[str, str] = {}
        self.settings: dict[str, str] = {}
        self.cluster_init: list[str] = []
        self.volumes: dict[str, dict[str, str]] = defaultdict(dict)
        self.exports: dict[str, dict[str, str]] = defaultdict(dict)


def parse(template: str) -> dict[str, Section]:
    """Sections by name (`defaults`, `scheduler`, arrays); triple-quoted CloudInit scripts are skipped whole."""
    sections: dict[str, Section] = {}
    current: Section | None = None
    sub = ""
    quoted = False
    for line in template.splitlines():
        if quoted:
            quoted = "'''" not in line
            continue
        if line.count("'''") == 1:
            quoted = True
            continue
        if line.strip().startswith("#"):
            continue
        if match := SECTION.match(line):
            current, sub = sections.setdefault(match.group(2), Section()), ""
            continue
        if current is None:
            continue
        if match := SUBSECTION.match(line):
            sub = match.group(1)
            if sub.startswith("cluster-init "):
                current.cluster_init.append(sub.split(" ", 1)[1])
            continue
        if not (match := ASSIGNMENT.match(line)):
            continue
        key, value = match.group(1), match.group(2).strip('"')
        if sub == "":
            current.attributes[key] = value
        elif sub == "configuration":
            current.settings[key] = value
        elif sub.startswith("volume "):
            current.volumes[sub.split(" ", 1)[1]][key] = value
        elif sub.startswith("configuration cyclecloud.exports.builtin"):
            current.exports[sub.rsplit("builtin", 1)[1]][key] = value
    return sections


def _spec_kept(spec: str, rendered: list[str], release: str) -> bool:
    """A spec of a project hpclz-cluster-sync uploads (FACTS["uploaded_projects"]) is kept when the rendered template
    names that upload, without the cyclecloud/ prefix and at the pinned release (`slurm:execute:4.0.9`); the others
    are as stock."""
    project = spec.removeprefix("cyclecloud/").split(":", 1)[0]
    if project in FACTS["uploaded_projects"]["projects"]:
        return f"{spec.removeprefix('cyclecloud/')}:{release}" in rendered
    return spec in rendered


def _section_missing(where: str, section: Section, facts: dict[str, Any], release: str) -> list[str]:
    out = [
        f"{where}: {key} = {value}"
        for key, value in facts.get("attributes", {}).items()
        if section.attributes.get(key) != value
    ]
    out += [f"{where}: attribute {key}" for key in facts.get("attributes_present", []) if key not in section.attributes]
    out += [
        f"{where}: setting {key} = {value}"
        for key, value in facts.get("settings", {}).items()
        if section.settings.get(key) != value
    ]
    out += [f"{where}: setting {key}" for key in facts.get("settings_present", []) if key not in section.settings]
    out += [
        f"{where}: setting {key} left to CycleCloud's default"
        for key in facts.get("settings_absent", {})
        if key in section.settings
    ]
    out += [
        f"{where}: cluster-init {spec}"
        for spec in facts.get("cluster_init", [])
        if not _spec_kept(spec, section.cluster_init, release)
    ]
    return out


def missing(template: str, release: str = FACTS["release"]) -> list[str]:
    """Every stock fact the rendered template drops, as `<section>: <fact>`."""
    sections = parse(template)
    out = _section_missing("node defaults", sections.get("defaults", Section()), FACTS["node_defaults"], release)
    out += _section_missing("scheduler", sections.get("scheduler", Section()), FACTS["scheduler"], release)
    if "login" in sections:
        out += _section_missing("login", sections["login"], FACTS["login"], release)
    arrays = [name for name in sections if name not in ("defaults", "scheduler", "login")]
    if not arrays:
        out.append("no execute nodearray")
    for name in arrays:
        out += _section_missing(f"nodearray {name}", sections[name], FACTS["execute"], release)
    scheduler = sections.get("scheduler", Section())
    if scheduler.volumes:
        volumes = FACTS["built_in_volumes"]
        for volume in ("sched", "shared"):
            if scheduler.volumes[volume].get("Size") != volumes[volume]["Size"]:
                out.append(f"scheduler: volume {volume} Size = {volumes[volume]['Size']}")
        if scheduler.exports["sched"].get("options") != volumes["sched"]["export_options"]:
            out.append("scheduler: /sched exported with no_root_squash")
    return out


def _cluster(stem: str) -> str:
    (compute,) = [d for d in preset_plan(stem).deployments if d.component == "compute"]
    return compute.artifacts["cyclecloud/slurm-cluster.txt"]


def test_the_facts_are_the_pinned_release() -> None:
    assert FACTS["release"] == CURRENT.project
    assert "50e673900227073883c5d74828863be4435bdb9a" in FACTS["provenance"]
    assert FACTS["uploaded_projects"]["projects"] == [SLURM_PROJECT]


@pytest.mark.parametrize("stem", PRESETS)
def test_every_preset_keeps_every_stock_fact(stem: str) -> None:
    template = _cluster(stem)
    assert missing(template) == []
    # The release's specs, pinned: never a spec of another release, never the project CycleCloud takes from GitHub.
    for spec in re.findall(r"\[\[\[cluster-init ((?:cyclecloud/)?slurm:[a-z]+:[0-9.]+)\]\]\]", template):
        assert spec.startswith("slurm:") and spec.endswith(f":{CURRENT.project}"), spec


@pytest.mark.parametrize(
    ("drop", "reported"),
    [
        ("        slurm.role = execute\n", "setting slurm.role = execute"),
        ("        [[[cluster-init cyclecloud/healthagent:default]]]\n", "cluster-init cyclecloud/healthagent:default"),
        ("        slurm.slurmrestd.user.uid = 11102\n", "node defaults: setting slurm.slurmrestd.user.uid = 11102"),
        ("    TerminateNotificationTimeout = 10m\n", "node defaults: TerminateNotificationTimeout = 10m"),
    ],
)
def test_a_dropped_fact_is_reported(drop: str, reported: str) -> None:
    template = _cluster("ai-training")
    assert drop in template
    assert any(reported in line for line in missing(template.replace(drop, "")))


def test_a_spec_of_another_release_is_reported() -> None:
    template = _cluster("energy").replace(f"slurm:execute:{CURRENT.project}", "slurm:execute:3.0.11")
    assert any("cluster-init cyclecloud/slurm:execute" in line for line in missing(template))


def test_a_prefixed_spec_of_the_uploaded_project_is_reported() -> None:
    """`cyclecloud/slurm:...` would make CycleCloud run the project it downloads from GitHub itself, not the upload
    hpclz-cluster-sync checked (learn.microsoft.com/azure/cyclecloud/cluster-references/cluster-init-reference)."""
    template = _cluster("energy")
    assert missing(template) == []
    prefixed = template.replace(
        f"[[[cluster-init slurm:execute:{CURRENT.project}]]]",
        f"[[[cluster-init cyclecloud/slurm:execute:{CURRENT.project}]]]",
    )
    assert prefixed != template
    assert any("cluster-init cyclecloud/slurm:execute" in line for line in missing(prefixed))


def test_the_parser_skips_cloud_init_scripts() -> None:
    quote = "'" * 3
    template = (
        f"[[node defaults]]\n    CloudInit = {quote}#!/bin/bash\nslurm.role = fake\n{quote}\n    KeyPairLocation = x\n"
    )
    section = parse(template)["defaults"]
    assert section.attributes == {"KeyPairLocation": "x"}
    assert section.settings == {}


def test_a_setting_the_stock_leaves_to_cyclecloud_is_reported() -> None:
    """Turning periodic converge off is a departure from the stock template, which leaves it at CycleCloud's default."""
    template = _cluster("ai-training")
    anchor = "        slurm.enable_healthchecks = true\n"
    assert anchor in template
    changed = template.replace(anchor, anchor + "        cyclecloud.maintenance_converge.enabled = false\n", 1)
    assert missing(changed) == [
        "node defaults: setting cyclecloud.maintenance_converge.enabled left to CycleCloud's default"
    ]
