"""The CycleCloud server's customData, which ARM cannot update in place ("This property cannot be updated after the VM
is created", ARM OSProfile.customData), across hpclz upgrades. A server an hpclz made before hpclz-server-programs
holds the programs themselves in customData: the plan takes the server rebuild path, once, instead of refusing every
later deploy. From then on a newer hpclz's programs reach the server from its wheel and customData stays the same."""

from __future__ import annotations

import base64
import gzip
import shutil
from pathlib import Path

from hpclz.deploy.wheel import Wheel
from hpclz.deploy.wheel_step import resubmit_for_wheel, takes_wheel
from hpclz.package_data import templates_dir
from hpclz.plan.changeset import Policy
from hpclz.plan.offline import offline_changeset
from hpclz.render.build import build_plan
from hpclz.render.cloudinit import WHEEL_PARAMETER, custom_data, server_cloud_config
from hpclz.render.engine import environment, render_text
from hpclz.render.zone import Zone
from tests.plan.support import applied_state, edited, preset


def test_an_older_hpclzs_server_programs_plan_a_server_rebuild_not_a_refusal() -> None:
    """A server whose customData differs (here its programs' text: a server made before hpclz-server-programs)."""
    config = preset("finance")
    plan = build_plan(config)
    state = applied_state(config, plan)
    (server,) = [
        r for r in state.resources if r.type.lower() == "microsoft.compute/virtualmachines" and "-cc-" in r.name
    ]
    rendered = server.properties["properties"]["osProfile"]["customData"]
    text = gzip.decompress(base64.b64decode(rendered)).decode()
    older = text.replace("hpclz-cluster-sync", "hpclz-cluster-sync-of-an-older-hpclz", 1)
    assert older != text
    server.properties["properties"]["osProfile"]["customData"] = custom_data(older)
    # The older hpclz's compute template was another template, so its recorded hash is another too.
    state.deployments[server.deployment].template_hash = "the older hpclz's"

    changes = offline_changeset(plan, state)

    assert changes.blocked == []
    (change,) = [r for r in changes.changed_resources if r.id == server.id]
    assert change.verdict.policy is Policy.REPLACE
    action = change.verdict.action_needed
    assert "terminate_cluster" in action and "hpclz deploy --replace" in action and "power_down_force" in action
    assert "hpclz-cluster-sync" in change.verdict.reason


def _newer_templates(tmp_path: Path) -> Path:
    """hpclz's template folder as a newer hpclz ships it: hpclz-cluster-sync and hpclz-cc-users changed."""
    templates = tmp_path / "templates"
    shutil.copytree(templates_dir(), templates)
    for name in ("cluster_sync.py", "cc_users.py"):
        program = templates / "cloud-init" / name
        program.write_text(program.read_text(encoding="utf-8") + "\nNEWER = True\n", encoding="utf-8")
    return templates


def test_a_newer_hpclzs_server_programs_leave_custom_data_byte_identical(tmp_path: Path) -> None:
    newer = environment(_newer_templates(tmp_path))
    zone = Zone(preset("finance"))
    assert render_text("cloud-init/cluster_sync.py", newer) != render_text("cloud-init/cluster_sync.py")
    assert custom_data(server_cloud_config(zone, newer)) == custom_data(server_cloud_config(zone))
    # The folder is read: where the programs still ride in customData (no CycleCloud identity to read the locker
    # with), the newer ones change it.
    bare = Zone(edited(preset("finance"), lambda d: d["identity"]["managed_identities"].update({"scheduler": False})))
    assert server_cloud_config(bare, newer) != server_cloud_config(bare)


def test_a_newer_hpclzs_server_programs_plan_an_in_place_update_not_a_rebuild(tmp_path: Path) -> None:
    """The zone as the older hpclz left it: its server's customData rendered with other programs, another compute
    template (hash) and another wheel on the VM's hpclz-wheel tag."""
    config = preset("finance")
    plan = build_plan(config)
    state = applied_state(config, plan)
    (server,) = [
        r for r in state.resources if r.type.lower() == "microsoft.compute/virtualmachines" and "-cc-" in r.name
    ]
    older = custom_data(server_cloud_config(Zone(config), environment(_newer_templates(tmp_path))))
    server.properties["properties"]["osProfile"]["customData"] = older
    state.deployments[server.deployment].template_hash = "the older hpclz's"

    changes = offline_changeset(plan, state)

    assert changes.blocked == []
    assert [r for r in changes.changed_resources if r.id == server.id] == [], "the server itself is unchanged"
    assert changes.worst_policy is Policy.IN_PLACE
    # What deploy adds for the newer hpclz's wheel: the compute deployment submitted again, which changes the VM's
    # hpclz-wheel tag in place; the server's loader then installs the programs from that wheel.
    target = takes_wheel(plan)
    assert target is not None and target.name == server.deployment
    state.outputs[f"{target.component}.{WHEEL_PARAMETER}"] = f"{'0' * 64}/hpclz-0.0.1-py3-none-any.whl"
    resubmit_for_wheel(changes, plan, state, Wheel(tmp_path / "hpclz-9.9.9-py3-none-any.whl", "1" * 64))
    assert changes.resubmit == [target.name]
