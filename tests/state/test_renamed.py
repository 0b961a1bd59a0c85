"""A config file whose zone was deployed under another name: which earlier states count (hpclz.state.renamed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hpclz.azure.backends import open_backend
from hpclz.config.loader import load_config
from hpclz.errors import HpclzError
from hpclz.state.local import LocalBackend
from hpclz.state.renamed import config_ref, earlier_zone, refuse_renamed_zone
from tests.conftest import REPO
from tests.state.conftest import sample_state


def _zone(folder: Path, name: str) -> tuple[Path, LocalBackend]:
    config_file = folder / "lz.yaml"
    text = (REPO / "configs" / "energy.yaml").read_text()
    config_file.write_text(text.replace("name: energy ", f"name: {name} "))
    backend = open_backend(load_config(config_file).config, base_dir=folder, config_file=str(config_file))
    assert isinstance(backend, LocalBackend)
    return config_file, backend


def _deployed(config_file: Path, backend: LocalBackend) -> None:
    doc = sample_state(load_config(config_file).config)
    doc.config_file = config_ref(backend, str(config_file))
    backend.write(doc)


def test_the_same_file_under_a_new_name_is_refused_naming_both(tmp_path: Path) -> None:
    _deployed_zone(tmp_path)
    config_file, backend = _zone(tmp_path, "energy2")
    with pytest.raises(HpclzError, match=r"metadata\.name: 'energy' -> 'energy2' NOT ALLOWED") as refused:
        refuse_renamed_zone(backend, load_config(config_file))
    assert "orphan energy-prod (1 resources" in refused.value.message
    assert f"{config_file}:9:" in refused.value.message  # the line of metadata.name
    assert not backend.root.exists()  # nothing was made for the new name


def test_another_file_or_a_destroyed_zone_is_not_a_rename(tmp_path: Path) -> None:
    config_file, old = _deployed_zone(tmp_path)
    _, renamed = _zone(tmp_path, "energy2")
    assert earlier_zone(renamed, str(config_file)) is not None

    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(config_file, other / "lz.yaml")
    # Another config file (a copy in its own folder) deploys a zone of its own.
    assert earlier_zone(renamed, str(other / "lz.yaml")) is None

    doc = old.read()
    assert doc is not None
    doc.resources = []  # destroyed with --include-data: nothing left to orphan
    old.write(doc)
    assert earlier_zone(renamed, str(config_file)) is None


def _deployed_zone(folder: Path) -> tuple[Path, LocalBackend]:
    config_file, backend = _zone(folder, "energy")
    _deployed(config_file, backend)
    return config_file, backend
