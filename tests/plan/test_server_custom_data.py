"""A zone deployed by an older hpclz, whose CycleCloud server programs were different: its server's customData differs
from the one rendered now, which ARM cannot update in place ("This property cannot be updated after the VM is
created", ARM OSProfile.customData). The plan takes the server rebuild path instead of refusing every later deploy."""

from __future__ import annotations

import base64
import gzip

from hpclz.plan.changeset import Policy
from hpclz.plan.offline import offline_changeset
from hpclz.render.build import build_plan
from hpclz.render.cloudinit import custom_data
from tests.plan.support import applied_state, preset


def test_an_older_hpclzs_server_programs_plan_a_server_rebuild_not_a_refusal() -> None:
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
