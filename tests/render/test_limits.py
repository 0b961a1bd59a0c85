"""Azure's payload and template limits, measured on every preset and reported by `hpclz render`.

customData 65,535 bytes and userData 64 KB (hpclz.render.cloudinit); a template 4 MB, a resource 1 MB, 800
resources (learn.microsoft.com/azure/azure-resource-manager/templates/best-practices, "Template limits").
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from hpclz.errors import HpclzError
from hpclz.render.limits import RESOURCE_BYTES, TEMPLATE_BYTES, TEMPLATE_RESOURCES, LimitUse, check, measure
from hpclz.render.payload import unpack
from tests.conftest import REPO
from tests.render.conftest import cyclecloud_vms, preset_plan

PRESETS = sorted(p.stem for p in (REPO / "configs").glob("*.yaml"))


@pytest.mark.parametrize("stem", PRESETS)
def test_every_preset_keeps_headroom_on_every_limit(stem: str) -> None:
    uses = measure(preset_plan(stem))
    kinds = {(u.unit, u.limit) for u in uses}
    assert ("bytes", TEMPLATE_BYTES) in kinds and ("resources", TEMPLATE_RESOURCES) in kinds
    assert ("bytes", RESOURCE_BYTES) in kinds
    payloads = [u for u in uses if u.what.endswith(("customData", "userData"))]
    assert any(u.what.endswith("userData") for u in payloads) and any(u.what.endswith("customData") for u in payloads)
    # The CycleCloud server's payloads keep at least half their limit free: a partition edit is never the one
    # that crosses it (the issue found manufacturing's userData at 97 %).
    for use in payloads:
        assert use.headroom_pct >= 50, use.line()
    for use in uses:
        assert not use.over, use.line()


@pytest.mark.parametrize("stem", PRESETS)
def test_every_node_script_is_measured_against_the_nodes_custom_data(stem: str) -> None:
    """CycleCloud hands each node's CloudInit to its cloud-init, inside the node VM's customData beside its own part,
    whose size no source gives: every node's script, as shipped, is measured, and keeps over a third of the limit
    for CycleCloud's part (the largest, ai-training's h100 and h200, use 40,701 bytes, 62 %, as shipped without the
    comment lines of the programs and units they write: hpclz.render.shipped)."""
    plan = preset_plan(stem)
    uses = [u for u in measure(plan) if u.what.endswith(" CloudInit")]
    (vm,) = cyclecloud_vms(plan)
    document = json.loads(unpack(vm["properties"]["userData"]).data)  # type: ignore[union-attr]
    arrays = re.findall(r"^\s*\[\[(?:node|nodearray) ([^\]]+)\]\]", document["template"], re.MULTILINE)
    scripts = [name for name in arrays if name != "defaults"]
    assert [u.what.split(" node ")[1].removesuffix(" CloudInit") for u in uses] == scripts
    assert "scheduler" in scripts and len(scripts) >= 3
    for use in uses:
        assert use.limit == 65535 and use.unit == "bytes"
        assert use.used < use.limit * 2 / 3, use.line()


def test_user_data_is_measured_as_azure_counts_it() -> None:
    uses = {u.what: u for u in measure(preset_plan("manufacturing"))}
    (user,) = [u for name, u in uses.items() if name.endswith("userData")]
    assert user.compressed and user.uncompressed is not None and user.uncompressed > user.used
    assert user.unit == "base64 characters" and user.limit == 65536
    assert user.codec == "xz" and f"xz of {user.uncompressed:,} bytes" in user.line()


@pytest.mark.parametrize("stem", PRESETS)
def test_custom_data_is_measured_compressed_as_azure_counts_it(stem: str) -> None:
    """Azure counts customData's bytes after base64 decoding (Microsoft.Compute OSProfile.customData: "The maximum
    length of the binary array is 65535 bytes"), which hpclz always gzips."""
    plan = preset_plan(stem)
    (server,) = cyclecloud_vms(plan)
    sent = len(base64.b64decode(server["properties"]["osProfile"]["customData"]))
    (use,) = [u for u in measure(plan) if u.what == f"compute {server['name']} customData"]
    assert use.compressed and use.used == sent and use.unit == "bytes" and use.limit == 65535
    assert use.uncompressed is not None and use.uncompressed > 2 * use.used
    assert f"gzip of {use.uncompressed:,} bytes" in use.line()


def test_a_use_over_its_limit_is_refused_in_one_line() -> None:
    over = LimitUse(what="compute template", used=TEMPLATE_RESOURCES + 1, limit=TEMPLATE_RESOURCES, unit="resources")
    with pytest.raises(HpclzError) as caught:
        check([over])
    assert "compute template is 801 resources, over Azure's limit of 800" in str(caught.value)
    assert "\n" not in str(caught.value)
    check([over.model_copy(update={"used": TEMPLATE_RESOURCES})])  # at the limit is allowed


def test_render_reports_the_headroom(tmp_path: Path) -> None:
    from hpclz.services.render import RenderOptions, render

    result = render(RenderOptions(config=REPO / "configs" / "energy.yaml", out_dir=tmp_path / "out", gates=False))
    body = result.payload.json_body()
    users = [u for u in body["limits"] if u["what"].endswith("userData")]
    assert users and all(0 < u["headroom_pct"] < 100 for u in users)
    assert json.dumps(body)  # the JSON envelope carries it
