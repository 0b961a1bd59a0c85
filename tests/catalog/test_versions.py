"""The table of triples and Slurm's compatibility window (https://slurm.schedmd.com/upgrades.html)."""

from __future__ import annotations

import pytest

from hpclz.catalog.versions import (
    CURRENT,
    SLURM_MAJORS,
    STACK,
    direct_hop_allowed,
    find,
    skew,
    upgrade_path,
    window,
)


def test_the_current_triple_is_ccws_2026_07_02() -> None:
    assert (CURRENT.cyclecloud, CURRENT.project, CURRENT.slurm) == ("8.9.1", "4.0.9", "25.11.5")
    assert CURRENT.image_version == "8.9.120260630"
    assert [t.role for t in STACK].count("current") == 1


@pytest.mark.parametrize(
    ("target", "back"),
    # upgrades.html: "Slurm 24.11 introduced compatibility with the previous three major releases"; before it, two.
    [("25.11.5", 3), ("24.11.1", 3), ("25.05.5", 3), ("24.05.4-2", 2), ("23.11.10-2", 2)],
)
def test_window_follows_the_upgrade_guide(target: str, back: int) -> None:
    assert window(target) == back


def test_skew_counts_releases_not_numbers() -> None:
    # 24.05 -> 24.11 is one release although the minor numbers differ by six.
    assert skew("24.05.4-2", "24.11.1") == 1
    assert skew("24.05.4-2", "25.11.5") == 3
    assert skew("23.11.10-2", "25.11.5") == 4
    assert skew("25.11.5", "24.05.4-2") == -3
    assert skew("21.08.1", "25.11.5") is None
    assert list(SLURM_MAJORS) == sorted(SLURM_MAJORS)


def test_example_of_the_guide_holds() -> None:
    """slurmdbd 25.11.x accepts 25.11, 25.05, 24.11 and 24.05, not 23.11 (upgrades.html, Compatibility Window)."""
    from_2405 = find("8.7.1", "3.0.11", "24.05.4-2")
    from_2311 = find("8.7.1", "3.0.11", "23.11.10-2")
    assert from_2405 is not None and from_2311 is not None
    assert direct_hop_allowed(from_2405, CURRENT)
    assert not direct_hop_allowed(from_2311, CURRENT)
    assert not direct_hop_allowed(CURRENT, from_2405)  # never back


def test_road_from_23_11_runs_through_25_05() -> None:
    from_2311 = find("8.7.1", "3.0.11", "23.11.10-2")
    assert from_2311 is not None
    road = upgrade_path(from_2311, CURRENT)
    assert road is not None
    assert [t.slurm for t in road] == ["25.05.5", "25.11.5"]
    for here, there in zip([from_2311, *road], road, strict=False):
        assert direct_hop_allowed(here, there)


def test_no_road_back_and_none_to_a_source() -> None:
    from_2405 = find("8.7.1", "3.0.11", "24.05.4-2")
    assert from_2405 is not None
    assert upgrade_path(CURRENT, from_2405) is None
    assert upgrade_path(CURRENT, CURRENT) == []


def test_every_row_names_its_source() -> None:
    for row in STACK:
        assert row.source.startswith("Azure/cyclecloud-slurm"), row
        assert bool(row.image_version) == row.renderable, row
