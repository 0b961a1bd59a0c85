"""The shipped region catalog, and config that speaks the user's language."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from hpclz.catalog import load_regions
from hpclz.config import load_config_text
from hpclz.config.patterns import PLAIN, plain
from hpclz.config.schema import config_schema
from hpclz.errors import ConfigError
from tests.conftest import REPO, RunCli

# `az account list-locations --query "[].{Name: name, DisplayName: displayName}" -o table`, as captured in
# github.com/dtrac/Azure-DevOps UsefulCommands.md and gist.github.com/phumpal/66965773723fd40ccd27338838667f43.
CAPTURED_LIST_LOCATIONS = """\
eastasia            East Asia
southeastasia       Southeast Asia
centralus           Central US
eastus              East US
eastus2             East US 2
westus              West US
northcentralus      North Central US
southcentralus      South Central US
northeurope         North Europe
westeurope          West Europe
japanwest           Japan West
japaneast           Japan East
brazilsouth         Brazil South
australiaeast       Australia East
australiasoutheast  Australia Southeast
southindia          South India
centralindia        Central India
westindia           West India
canadacentral       Canada Central
canadaeast          Canada East
uksouth             UK South
westus3             West US 3
swedencentral       Sweden Central
southafricanorth    South Africa North
"""

AI = (REPO / "configs" / "ai-training.yaml").read_text(encoding="utf-8")


def _with_location(value: str) -> str:
    return AI.replace("location: eastus2", f"location: {value}", 1)


@pytest.mark.parametrize("line", CAPTURED_LIST_LOCATIONS.splitlines())
def test_catalog_has_every_region_az_lists(line: str) -> None:
    name, display = line.split(maxsplit=1)
    region = load_regions().get(name)
    assert region is not None and region.display_name == display.strip()


def test_catalog_is_dated_and_sourced() -> None:
    raw = json.loads(resources.files("hpclz.catalog").joinpath("regions.json").read_text(encoding="utf-8"))
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw["_retrieved"])
    assert all(src.startswith("https://learn.microsoft.com/") for src in raw["_sources"])
    regions = load_regions().regions
    for region in regions.values():
        assert region.paired_region is None or region.paired_region in regions, region.name
    # The pair table: "Europe | North Europe | West Europe", "North America | West US 3 | East US".
    assert regions["northeurope"].paired_region == "westeurope"
    assert regions["westus3"].paired_region == "eastus"


@pytest.mark.parametrize("spelling", ["WestEurope", "West Europe", "west-europe", "WESTEUROPE"])
def test_region_spellings_normalise(spelling: str) -> None:
    assert load_config_text(_with_location(f'"{spelling}"')).config.metadata.location == "westeurope"


def test_region_typo_is_one_did_you_mean(run_cli: RunCli, tmp_path: Path) -> None:
    config = tmp_path / "zone.yaml"
    config.write_text(_with_location("westeurpe"))
    result = run_cli("validate", str(config))
    assert result.exit_code != 0
    assert "unknown region 'westeurpe', did you mean westeurope?" in result.stdout
    # The typo is reported once: not again as resource names that grew too long.
    assert re.findall(r"error (HPCLZ-\S+)", result.stdout) == ["HPCLZ-ORG-005"]


def test_bad_region_characters_say_what_a_region_looks_like() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config_text(_with_location("west*europe"), "zone.yaml")
    assert "expected an Azure region name: letters and digits, like westeurope" in str(caught.value)


def _patterns(node: object) -> set[str]:
    if isinstance(node, dict):
        found = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
        return found | {p for value in node.values() for p in _patterns(value)}
    if isinstance(node, list):
        return {p for value in node for p in _patterns(value)}
    return set()


def test_every_config_pattern_has_plain_words_with_an_example() -> None:
    for pattern in _patterns(config_schema()):
        assert pattern in PLAIN, pattern
        assert pattern not in plain(pattern)
        assert re.search(r"\blike\b|\bnothing\b", plain(pattern)), pattern
    assert "^" not in plain("^[a-z]+$") and "[" not in plain("^[a-z]+$")


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("name: aitrain", "name: AI_Train", "2 to 12 lowercase letters or digits"),
        ("name: h100 ", "name: H100! ", "up to 15 lowercase letters, digits"),
        ("vm_size: Standard_ND96isr_H100_v5", "vm_size: ND96isr_H100_v5", "an Azure VM size name, like"),
    ],
)
def test_pattern_errors_show_no_regex(old: str, new: str, words: str) -> None:
    assert old in AI
    with pytest.raises(ConfigError) as caught:
        load_config_text(AI.replace(old, new, 1), "zone.yaml")
    message = str(caught.value)
    assert words in message
    assert not re.search(r"\^|\$'|\[a-z|\\d|pattern", message), message


# ai-training without its pinned node images (HPCLZ-CMP-050), so a test can set every role's image once.
PIN = "microsoft-dsvm:ubuntu-hpc:2204:22.04.2026082801"
UNPINNED = AI.replace(f", image: {PIN}", "").replace(f"      image: {PIN}\n", "")
# ImageName shapes from learn.microsoft.com/azure/cyclecloud/how-to/create-custom-image.
GALLERY = (
    "/subscriptions/xxxxxxxx-xxxx-xxxx-xxxxxxxxxxxx/resourceGroups/MyResourceGroup/providers/Microsoft.Compute"
    "/galleries/MyGallery/images/MyImage/versions/1.0.0"
)
MANAGED = (
    "/subscriptions/xxxxxxxx-xxxx-xxxx-xxxxxxxxxxxx/resourceGroups/MyResourceGroup/providers/Microsoft.Compute"
    "/images/MyCustomImage"
)


@pytest.mark.parametrize("image", [GALLERY, MANAGED, GALLERY.rsplit("/versions/", 1)[0]])
def test_custom_images_accepted_for_scheduler_login_and_partitions(image: str) -> None:
    text = UNPINNED.replace(
        "scheduler: {vm_size: Standard_D8as_v5}", f"scheduler: {{vm_size: Standard_D8as_v5, image: {image}}}"
    )
    text = text.replace("login: {vm_size: Standard_D16as_v5,", f"login: {{image: {image}, vm_size: Standard_D16as_v5,")
    text = text.replace("    - name: h100 ", f"    - image: {image}\n      name: h100 ", 1)
    compute = load_config_text(text).config.compute
    assert compute.scheduler.image == compute.login.image == compute.partitions[0].image == image


def test_gallery_without_an_image_is_refused_in_words() -> None:
    text = UNPINNED.replace("    - name: h100 ", f"    - image: {GALLERY.split('/images/')[0]}\n      name: h100 ", 1)
    with pytest.raises(ConfigError) as caught:
        load_config_text(text, "zone.yaml")
    assert "or an Azure Compute Gallery image ID, like" in str(caught.value)


def test_size_outside_the_catalog_warns_and_leaves_it_to_the_live_check(run_cli: RunCli, tmp_path: Path) -> None:
    config = tmp_path / "zone.yaml"
    # A real size the catalog leaves out: Azure's NCasT4_v3 (learn.microsoft.com/azure/virtual-machines/sizes/
    # gpu-accelerated/ncast4v3-series) is not in hpclz's catalog.
    config.write_text(AI.replace("vm_size: Standard_ND96isr_H100_v5", "vm_size: Standard_NC4as_T4_v3", 1))
    result = run_cli("validate", str(config))
    assert result.exit_code == 0, result.stdout
    assert "warning HPCLZ-CMP-001" in result.stdout
    assert "Azure checks it live before deploy, HPCLZ-CMP-101" in result.stdout
