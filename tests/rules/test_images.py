"""HPCLZ-CMP-050 (a node image that floats) and the plan of a pinned version's bump (docs/patching.md).

The versions are real: 22.04.2026082801 is the Ubuntu-HPC 22.04 version Azure Batch's supported-images list showed
in 2026-09 (EON-LEE/azure-physicalai-workshop@2909eae docs/batch-platform.example.json), the presets' pin;
22.04.2024043001 is the version Azure's CCWS names as the first with PMIx (Azure/cyclecloud-slurm-workspace@8d7dbe7
specs/default/cluster-init/scripts/21-pmix.sh).
"""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from hpclz.cli.views.changeset import print_changeset
from hpclz.plan.changeset import Policy
from hpclz.plan.config_diff import config_changes
from hpclz.plan.offline import offline_changeset
from hpclz.render.build import build_plan
from hpclz.rules.config.images import SCHEDULER_PYTHON, floats, scheduler_python
from hpclz.rules.config.racks import KNOWN_IMAGE_ARCHITECTURES
from tests.plan.support import applied_state, edited, preset
from tests.rules.cases import Case, _set, load_case
from tests.rules.test_config_rules import _findings

PINNED = "microsoft-dsvm:ubuntu-hpc:2204:22.04.2026082801"
OLDER = "microsoft-dsvm:ubuntu-hpc:2204:22.04.2024043001"
GALLERY = "/subscriptions/0/resourceGroups/rg/providers/Microsoft.Compute/galleries/hpc/images/u2204"


@pytest.mark.parametrize(
    ("image", "floating"),
    [
        ("microsoft-dsvm:ubuntu-hpc:2204:latest", True),
        ("microsoft-dsvm:ubuntu-hpc:2204:Latest", True),  # ARM compares versions case-insensitively
        (PINNED, False),
        (OLDER, False),
        ("almalinux:almalinux-hpc:8_7-hpc-gen2:8.7.2024042601", False),  # also named in 21-pmix.sh
        (GALLERY, True),
        (GALLERY + "/versions/1.0.0", False),
        ("/subscriptions/0/resourceGroups/rg/providers/Microsoft.Compute/images/u2204-golden", False),
    ],
)
def test_which_images_float(image: str, floating: bool) -> None:
    assert floats(image) is floating


def test_a_pinned_preset_passes_and_each_floating_role_is_named() -> None:
    assert _findings("HPCLZ-CMP-050", Case("energy", lambda _doc: None)) == []

    def unpin_all(doc: dict[str, Any]) -> None:
        for role in ("scheduler", "login"):
            del doc["compute"][role]["image"]
        for partition in doc["compute"]["partitions"]:
            del partition["image"]

    found = _findings("HPCLZ-CMP-050", Case("energy", unpin_all))
    assert sorted(f.path for f in found) == [
        "compute.login.image",
        "compute.partitions[gpu].image",
        "compute.partitions[hbv3].image",
        "compute.partitions[hbv4].image",
        "compute.scheduler.image",
    ]
    assert {f.severity.value for f in found} == {"error"}  # energy is prod
    hbv4 = next(f for f in found if f.path == "compute.partitions[hbv4].image")
    assert hbv4.message.startswith("partition hbv4: microsoft-dsvm:ubuntu-hpc:2204:latest gives each new node")


def test_no_login_nodes_no_login_image_finding() -> None:
    case = Case("manufacturing", _set("compute.login", {"vm_size": "Standard_D8as_v5", "count": 0}))
    assert load_case(case, "no-login").config.compute.login.image.endswith(":latest")
    assert _findings("HPCLZ-CMP-050", case) == []


def _plan_text(old: str, new: str) -> tuple[str, list[Any]]:
    base = edited(preset("energy"), lambda d: d["compute"]["partitions"][2].update(image=old))
    state = applied_state(base)
    config = edited(base, lambda d: d["compute"]["partitions"][2].update(image=new))
    changes = offline_changeset(build_plan(config), state)
    changes.config_changes = config_changes(state.applied_config, config)
    console = Console(width=300, no_color=True, record=True, force_terminal=False)
    print_changeset(console, changes)
    return console.export_text(), changes.config_changes


def test_bumping_a_pinned_version_plans_a_node_roll() -> None:
    text, changes = _plan_text(OLDER, PINNED)
    (change,) = [c for c in changes if c.path == "compute.partitions[gpu].image"]
    assert change.verdict.policy is Policy.DRAIN_PARTITION
    assert f'compute.partitions[gpu].image: "{OLDER}" -> "{PINNED}"  (replace nodes; drain partition gpu first' in text
    # The roll (scontrol(1) POWER_DOWN_ASAP: running jobs finish, then CycleCloud rebuilds the node from the image).
    assert "hpclz nodes roll CONFIG --partition gpu (State=POWER_DOWN_ASAP: running jobs finish first)" in text


def test_bumping_the_scheduler_image_restarts_the_scheduler() -> None:
    """CycleCloud starts the scheduler from its new image on the next start, its persistent volumes kept: a node
    restart (docs/deploy.md, the paragraph on a new size or image for the scheduler), not a data-loss replacement."""
    base = preset("energy")
    config = edited(base, lambda d: d["compute"]["scheduler"].update(image=OLDER))
    (change,) = [c for c in config_changes(applied_state(base).applied_config, config) if "scheduler" in c.path]
    assert change.path == "compute.scheduler.image" and change.verdict.policy is Policy.RESTART_NODES


# HPCLZ-CMP-051: the scheduler's hpclz needs Python >= 3.11 (docs/locker.md, hpclz-install-wheel).
def test_every_image_hpclz_knows_says_where_the_schedulers_python_comes_from() -> None:
    assert set(KNOWN_IMAGE_ARCHITECTURES) <= set(SCHEDULER_PYTHON)


@pytest.mark.parametrize("key", sorted(k for k, v in SCHEDULER_PYTHON.items() if v.python is not None))
def test_a_scheduler_image_with_python_311_within_reach_passes(key: tuple[str, str, str]) -> None:
    image = ":".join((*key, "latest"))
    assert scheduler_python(image.upper()) == SCHEDULER_PYTHON[key]  # URNs are matched without case
    assert _findings("HPCLZ-CMP-051", Case("finance", _set("compute.scheduler.image", image))) == []


@pytest.mark.parametrize(
    ("path", "image"),
    [
        ("compute.scheduler.image", GALLERY),  # a gallery image is the operator's to equip
        ("compute.login.image", "microsoft-dsvm:ubuntu-hpc:2004:latest"),  # only the scheduler runs hpclz
    ],
)
def test_what_cmp_051_does_not_judge(path: str, image: str) -> None:
    assert _findings("HPCLZ-CMP-051", Case("finance", _set(path, image))) == []


def test_the_ubuntu_2004_scheduler_finding_names_the_release() -> None:
    case = Case("finance", _set("compute.scheduler.image", "microsoft-dsvm:ubuntu-hpc:2004:latest"))
    (finding,) = _findings("HPCLZ-CMP-051", case)
    assert finding.path == "compute.scheduler.image"
    assert "is Ubuntu 20.04, which has no Python 3.11 or newer" in finding.message
