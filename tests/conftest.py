"""Shared fixtures. Service harnesses (Slurm, Azurite, ARM stand-in) live in tests/support/."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from hpclz.cli import main

REPO = Path(__file__).resolve().parent.parent
PRESETS = sorted((REPO / "configs").glob("*.yaml"))
FIXTURES = REPO / "tests" / "fixtures"  # real captures and recordings, with their provenance READMEs
IN_CI = os.environ.get("CI", "").lower() == "true"
# Gate results are cached per template (hpclz.arm.gate_cache); tests keep theirs out of the user's ~/.cache.
if "HPCLZ_CACHE_DIR" not in os.environ:
    os.environ["HPCLZ_CACHE_DIR"] = tempfile.mkdtemp(prefix="hpclz-test-gate-cache-")
    atexit.register(shutil.rmtree, os.environ["HPCLZ_CACHE_DIR"], ignore_errors=True)
# The energy and ai-training presets keep Slurm accounting's database password in Key Vault, read from
# SLURMDB_PASSWORD at deploy time, as an operator's shell holds it. Set for the session, not by an autouse
# fixture, which would reorder every test's monkeypatch teardown.
os.environ.setdefault("SLURMDB_PASSWORD", "slurmdb-Test-4b1d9e")
# `hpclz plan` reads retail prices when its cache is stale; tests never reach the real host. Port 9 (discard) on
# loopback has no listener here, so the read is refused at once and plan says it could not read prices. Tests of the
# read itself serve a stand-in (tests/cost/test_retail.py) and pass its URL.
os.environ.setdefault("HPCLZ_PRICES_ENDPOINT", "http://127.0.0.1:9/api/retail/prices")
# And the price cache starts empty: a developer's ~/.cache/hpclz/prices (refreshed by a real `hpclz prices refresh`)
# would otherwise change what plan estimates, and the tests' figures would depend on the machine they run on.
if "HPCLZ_PRICES_DIR" not in os.environ:
    os.environ["HPCLZ_PRICES_DIR"] = tempfile.mkdtemp(prefix="hpclz-test-prices-")
    atexit.register(shutil.rmtree, os.environ["HPCLZ_PRICES_DIR"], ignore_errors=True)


def require(condition: bool, what: str) -> None:
    """Skip locally when a real component is missing; under CI=true that is a failure, never a skip."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{what} is required under CI=true but is not available", pytrace=False)
    pytest.skip(f"{what} not available")


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


RunCli = Callable[..., CliResult]  # the type of the run_cli fixture


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> RunCli:
    """Run `hpclz ARGS` in-process, as the console script does, and capture what it printed."""

    def _run(*args: str) -> CliResult:
        code = main(list(args))
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return _run


@pytest.fixture(params=[p.stem for p in PRESETS])
def preset_path(request: pytest.FixtureRequest) -> Path:
    return REPO / "configs" / f"{request.param}.yaml"


# A test that requests one of these fixtures needs that real component: it gets the marker, so
# `-m "not slurm"` (or azurite, checkov) selects by what a test really uses, with no list to keep up.
COMPONENT_FIXTURES = {
    "azurite": "azurite",
    "blob_env": "azurite",
    "slurm_cluster": "slurm",
    "clean_slurm": "slurm",
    "power_cluster": "slurm",
    "scanned": "checkov",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            marker = COMPONENT_FIXTURES.get(fixture)
            if marker:
                item.add_marker(marker)
