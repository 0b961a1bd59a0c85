"""Readable diffs: encoded VM data is diffed as the cluster it carries, values are never cut, nested
values go over several lines."""

from __future__ import annotations

import base64
import re
from typing import Any

from rich.console import Console

from hpclz.cli.views.changeset import print_changeset, property_line
from hpclz.config.loader import LoadedConfig
from hpclz.config.source_map import SourceMap
from hpclz.plan.changeset import Action, PropertyChange
from hpclz.plan.contract import changeset_for
from hpclz.plan.decode import cluster_template, decode_text, readable
from hpclz.render.build import build_plan
from hpclz.render.payload import pack
from tests.plan.support import applied_state, edited, preset

BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{80,}")


def _printed(config_edit: Any) -> tuple[str, Any]:
    before = preset("energy")
    after = edited(before, config_edit)
    loaded = LoadedConfig(config=after, source=SourceMap(file="lz.yaml"))
    changes = changeset_for(loaded, build_plan(after), applied_state(before))
    console = Console(record=True, width=400, color_system=None)
    print_changeset(console, changes)
    return console.export_text(), changes


def _grow(d: dict[str, Any]) -> None:
    next(p for p in d["compute"]["partitions"] if p["name"] == "hbv4")["max_nodes"] = 130


def test_user_data_is_diffed_as_the_cluster_it_carries() -> None:
    text, changes = _printed(_grow)
    assert 'properties.userData:cluster.template.nodearray[hbv4].MaxCount: "100" -> "130"' in text
    assert not BASE64_RUN.search(text), "an encoded value reached the plan"
    vm = next(r for r in changes.resources if r.type == "Microsoft.Compute/virtualMachines")
    assert vm.action is Action.MODIFY and all(c.path.startswith("properties.userData:cluster.") for c in vm.changes)


def test_custom_data_is_diffed_line_by_line() -> None:
    def rename_admin(d: dict[str, Any]) -> None:
        d["identity"]["admin_username"] = "hpcops"

    text, _ = _printed(rename_admin)
    assert "properties.osProfile.customData:decoded:" in text
    assert '"      ADMIN=hpcadmin" -> "      ADMIN=hpcops"' in text
    assert not BASE64_RUN.search(text)


def test_gzip_compressed_custom_data_is_diffed_line_by_line() -> None:
    # customData is always gzip and base64 (hpclz.render.payload.pack): the plan shows the lines inside it.
    before = pack("#cloud-config\nruncmd:\n  - [echo, one]\n")
    after = pack("#cloud-config\nruncmd:\n  - [echo, two]\n")
    assert base64.b64decode(before)[:2] == b"\x1f\x8b"
    assert readable("properties.osProfile.customData", before, after) == [
        ("properties.osProfile.customData:decoded", "  - [echo, one]", "  - [echo, two]")
    ]


def test_cluster_template_sections_and_multiline_values() -> None:
    # The CycleCloud cluster template format: [cluster], [[nodearray NAME]], [[[configuration]]], and
    # ''' quoted multi-line values (Azure/cyclecloud-slurm templates/slurm.txt uses the same shapes).
    template = (
        "[cluster c]\n    [[nodearray gpu]]\n    MachineType = Standard_ND96isr_H100_v5\n    MaxCount = 4\n"
        "    CloudInit = '''#!/bin/bash\necho one\necho two'''\n        [[[configuration]]]\n"
        "        slurm.partition = gpu\n        [[[configuration cyclecloud.mounts.nfs_shared]]]\n"
        "        mountpoint = /shared\n    [[nodearray login]]\n    ComputerName := undefined\n"
    )
    flat = cluster_template(template)
    assert flat["nodearray[gpu].MaxCount"] == "4"
    assert flat["nodearray[gpu].configuration.slurm.partition"] == "gpu"
    assert flat["nodearray[gpu].CloudInit"].endswith("echo two'''")
    assert flat["nodearray[gpu].configuration[cyclecloud.mounts.nfs_shared].mountpoint"] == "/shared"
    assert flat["nodearray[login].ComputerName"] == "undefined"


def test_values_that_do_not_decode_are_left_alone() -> None:
    assert decode_text("[parameters('userData')]") is None
    assert decode_text("not base64!") is None
    assert readable("properties.userData", "[parameters('a')]", "[parameters('b')]") is None
    assert decode_text(base64.b64encode(b"#cloud-config\n").decode()) == "#cloud-config\n"


def test_no_value_is_cut_and_nested_values_go_over_lines() -> None:
    long_id = "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/" + "s" * 80
    line = property_line(PropertyChange(path="properties.subnet.id", kind=Action.MODIFY, before="a", after=long_id))
    assert long_id in line and "..." not in line
    nested = [{"name": f"rule-{i}", "properties": {"priority": 100 + i, "access": "Allow"}} for i in range(4)]
    block = property_line(PropertyChange(path="properties.securityRules", kind=Action.CREATE, after=nested))
    assert block.count("\n") > 10 and '"rule-3"' in block
