"""The shipped per-region availability of catalog VM sizes and their availability zones.

Every fact comes from a published capture committed under tests/fixtures with its provenance, and the shipped
file is exactly what scripts/regen-availability builds from them.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from importlib import resources
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType
from typing import Any

from hpclz.catalog import load_availability, load_catalog, load_regions
from tests.conftest import REPO

SCRIPT = REPO / "scripts" / "regen-availability"
WESTUS2 = REPO / "tests" / "fixtures" / "skus" / "westus2-list-skus-table.md"
GPU_ALL = REPO / "tests" / "fixtures" / "skus" / "gpu-list-skus-all-2026-08.md"
CAPTURES = {
    "crdb-module-westus2": WESTUS2,
    "snr-multilingual-gpu-skus": GPU_ALL,
    "azhpc-toolkit-cost-tools": REPO / "tests" / "fixtures" / "skus" / "azhpc-toolkit-how-to.md",
    "macrogauge-retail-eastus2": REPO / "tests" / "cost" / "fixtures" / "retail-eastus2-nd-gpu.json",
}


def shipped() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files("hpclz.catalog").joinpath("availability.json").read_text("utf-8"))
    return data


def generator() -> ModuleType:
    loader = SourceFileLoader("regen_availability", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_the_shipped_file_is_what_the_generator_builds_from_the_committed_captures(tmp_path: Path) -> None:
    data = shipped()
    out = tmp_path / "availability.json"
    out.write_text(json.dumps({k: v for k, v in data.items() if k not in ("_sources", "offered")}), "utf-8")
    assert set(CAPTURES) == set(data["_sources"])
    for source_id, capture in CAPTURES.items():
        source = data["_sources"][source_id]
        subprocess.run(
            [sys.executable, str(SCRIPT), str(capture), "--source-id", source_id, "--out", str(out)]
            + [arg for key in ("cite", "captured", "what") for arg in (f"--{key}", source[key])],
            check=True,
            capture_output=True,
        )
    assert json.loads(out.read_text("utf-8")) == data


def test_rerunning_a_source_replaces_its_facts_and_keeps_the_others(tmp_path: Path) -> None:
    out = tmp_path / "availability.json"
    out.write_bytes(resources.files("hpclz.catalog").joinpath("availability.json").read_bytes())
    before = out.read_text("utf-8")
    source = shipped()["_sources"]["crdb-module-westus2"]
    args = [sys.executable, str(SCRIPT), str(WESTUS2), "--source-id", "crdb-module-westus2", "--out", str(out)]
    subprocess.run(
        [*args, "--cite", source["cite"], "--captured", source["captured"], "--what", source["what"]], check=True
    )
    assert out.read_text("utf-8") == before


def test_the_captured_listing_gives_each_size_its_zones() -> None:
    # Rows of the real `az vm list-skus --location westus2 --output table` (tests/fixtures/skus/README.md).
    availability = load_availability()
    assert availability.zones("Standard_ND96asr_v4", "westus2") == ("3",)
    assert availability.zones("Standard_HC44rs", "westus2") == ("1", "2")
    assert availability.zones("Standard_D8as_v5", "westus2") == ("1", "2", "3")


def test_the_listing_taken_with_all_gives_gpu_zones_in_the_presets_regions() -> None:
    # Rows of the real `az vm list-skus --size Standard_NC/ND --all -o table` of 2026-08-13 (tests/fixtures/skus).
    availability = load_availability()
    assert availability.zones("Standard_ND96isr_H100_v5", "westeurope") == ("2",)
    assert availability.zones("Standard_NC24ads_A100_v4", "eastus2") == ("1", "3")
    assert availability.zones("Standard_NC24ads_A100_v4", "southcentralus") == ("1", "3")
    assert availability.zones("Standard_NC40ads_H100_v5", "southcentralus") == ("2", "3")
    assert availability.zones("Standard_ND96isr_H200_v5", "ukwest") == ()  # listed there, without zones


def test_the_most_recent_capture_decides_the_zones_where_captures_disagree() -> None:
    # westus2 NC24ads_A100_v4: zones 1,2 in the 2023-07-08 listing, 1,2,3 in the 2026-08-13 one.
    regen = generator()
    old = regen.facts(regen.parse(WESTUS2.read_text("utf-8")), {"Standard_NC24ads_A100_v4"})
    assert old["Standard_NC24ads_A100_v4"]["westus2"]["zones"] == ["1", "2"]
    offer = load_availability().offer("Standard_NC24ads_A100_v4", "westus2")
    assert offer is not None and offer.zones == ("1", "2", "3")
    assert set(offer.sources) == {"crdb-module-westus2", "snr-multilingual-gpu-skus"}


def test_a_summary_line_of_a_capture_gives_no_fact() -> None:
    # The capture says "(NC48ads_A100_v4: same pattern as NC24ads per region)" instead of printing the rows, and
    # "(australiaeast, ..., eastus2, ... all NotAvailableForSubscription)" for ND96isr_H100_v5: neither is a row.
    regen = generator()
    rows = regen.parse(GPU_ALL.read_text("utf-8"))
    assert all(row["ResourceType"] == "virtualMachines" for row in rows)
    found = regen.facts(rows, set(load_catalog().skus), set(load_regions().regions))
    assert set(found["Standard_NC48ads_A100_v4"]) == {"swedencentral"}  # its one printed row (A.3)
    assert "eastus2" not in found["Standard_ND96isr_H100_v5"]
    assert load_availability().zones("Standard_ND96isr_H100_v5", "eastus2") is None


def test_the_generator_reads_az_rows_without_zones_and_drops_regions_outside_the_catalog() -> None:
    regen = generator()
    rows = regen.parse(GPU_ALL.read_text("utf-8"))
    h100 = regen.facts(rows, {"Standard_ND96isr_H100_v5"})["Standard_ND96isr_H100_v5"]
    assert h100["southeastus"] == {"zones": []}  # a new region without zones; not in regions.json
    assert (
        "southeastus"
        not in regen.facts(rows, {"Standard_ND96isr_H100_v5"}, set(load_regions().regions))["Standard_ND96isr_H100_v5"]
    )
    westus = regen.facts(rows, {"Standard_NC24ads_A100_v4"})["Standard_NC24ads_A100_v4"]["westus"]
    assert westus == {"zones": [], "restrictions": "NotAvailableForSubscription, type: Location"}


def test_a_priced_or_listed_size_is_offered_but_its_zones_are_unknown() -> None:
    availability = load_availability()
    h200 = availability.offer("Standard_ND96isr_H200_v5", "eastus2")  # Retail Prices API, eastus2, 2026-10-07
    assert h200 is not None and h200.zones is None and h200.sources == ("macrogauge-retail-eastus2",)
    assert availability.regions_offering("Standard_HB120rs_v3") == ["southcentralus", "westeurope"]
    assert availability.regions_offering("standard_nd96isr_h100_v5") == [
        *("canadacentral", "eastus2", "italynorth", "norwayeast", "swedencentral", "uksouth", "westeurope")
    ]


def test_a_size_missing_from_a_capture_is_unknown_not_unavailable() -> None:
    # HBv3 is not in the westus2 listing, which (taken without --all) drops sizes restricted for its subscription.
    availability = load_availability()
    assert availability.offer("Standard_HB120rs_v3", "westus2") is None
    assert availability.zones("Standard_HB120rs_v3", "westus2") is None
    assert availability.regions_offering("Standard_HX176rs") == []


def test_the_generator_keeps_catalog_vm_rows_and_their_restrictions() -> None:
    regen = generator()
    rows = regen.parse(WESTUS2.read_text("utf-8"))
    assert {row["ResourceType"] for row in rows} == {"virtualMachines", "disks"}
    assert "Standard_ND6s" not in regen.facts(rows, set(load_catalog().skus))  # outside the catalog: ignored
    nd6s = regen.facts(rows, {"Standard_ND6s"})["Standard_ND6s"]["westus2"]
    assert nd6s == {
        "zones": ["1", "2"],
        "restrictions": "NotAvailableForSubscription, type: Zone, locations: westus2, zones: 1,2,3",
    }


def test_the_generator_refuses_a_file_without_a_listing(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("az vm list-skus --location westus2\n\nno table here\n", "utf-8")
    out = tmp_path / "availability.json"
    args = ["--source-id", "x", "--cite", "x", "--captured", "2026-11-26", "--what", "x", "--out", str(out)]
    result = subprocess.run([sys.executable, str(SCRIPT), str(notes), *args], capture_output=True, text=True)
    assert result.returncode != 0 and "no table" in result.stderr and not out.exists()


def test_every_fact_names_a_catalog_size_a_catalog_region_and_a_dated_source() -> None:
    data = shipped()
    sizes, regions = set(load_catalog().skus), set(load_regions().regions)
    for source in data["_sources"].values():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", source["captured"]) and source["cite"] and source["what"]
    for size, by_region in data["offered"].items():
        assert size in sizes
        for region, by_source in by_region.items():
            assert region in regions and by_source and set(by_source) <= set(data["_sources"])


def test_the_gaps_name_exactly_the_sizes_without_facts() -> None:
    data = shipped()
    missing = [size for size in load_catalog().skus if size not in data["offered"]]
    assert f"Catalog sizes with no fact in any region: {', '.join(missing)}." in data["_gaps"]
