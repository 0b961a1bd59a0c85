"""`hpclz init` without --preset asks a few questions, each defaulting to the preset's value, and writes a config
that validates (or, when the answers do not validate, says why and writes nothing); --yes and flags ask nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ruamel.yaml import YAML

from tests.conftest import RunCli


def _init(tmp_path: Path, answers: list[str], *flags: str) -> subprocess.CompletedProcess[str]:
    """The real console entry point, with the answers typed on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "hpclz", "init", "--out", str(tmp_path / "lz.yaml"), *flags],
        input="\n".join(answers) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_answers_reach_the_config_and_it_validates(tmp_path: Path, run_cli: RunCli) -> None:
    # energy: name, region kept, hbv4 kept, hbv3 left out, the gpu partition at 2 nodes, Lustre at 48 TiB.
    done = _init(tmp_path, ["energy", "seis", "", "", "", "", "0", "", "2", ""])
    assert done.returncode == 0, done.stderr
    assert "Partition gpu: max nodes (0 leaves it out) [4]:" in done.stdout  # the preset's value is the default
    text = (tmp_path / "lz.yaml").read_text(encoding="utf-8")
    data = YAML(typ="safe").load(text)
    assert data["metadata"]["name"] == "seis" and data["metadata"]["location"] == "southcentralus"
    assert [(p["name"], p["max_nodes"]) for p in data["compute"]["partitions"]] == [("hbv4", 100), ("gpu", 2)]
    assert "# prefix of every resource name" in text  # the preset's comments stay
    assert run_cli("validate", str(tmp_path / "lz.yaml")).exit_code == 0


def test_answers_that_do_not_validate_write_nothing(tmp_path: Path) -> None:
    done = _init(tmp_path, ["ai-training", "", "westeurope", *[""] * 7])  # outside the preset's allowed regions
    assert done.returncode == 3
    assert "HPCLZ-ORG-002: westeurope is not in allowed_locations" in done.stderr
    assert "nothing written" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "lz.yaml").exists()


def test_yes_and_flags_ask_nothing(tmp_path: Path) -> None:
    done = _init(tmp_path, [], "--yes", "--name", "lab")
    assert done.returncode == 0, done.stderr
    assert "?" not in done.stdout and "[" not in done.stdout  # no question asked
    assert YAML(typ="safe").load((tmp_path / "lz.yaml").read_text(encoding="utf-8"))["metadata"]["name"] == "lab"
