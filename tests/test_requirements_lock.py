"""src/hpclz/requirements-lock.txt, the dependencies hpclz-install-wheel installs on the scheduler with pip's
--require-hashes --no-deps (templates/cloud-init/install_wheel.sh.j2): it pins exactly pyproject's runtime dependencies
and what they need, each to a version pyproject allows, each with a SHA-256. Read offline: nothing is resolved here;
scripts/regen-lock regenerates it (uv pip compile --universal --generate-hashes)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO

LOCK = REPO / "src" / "hpclz" / "requirements-lock.txt"
# uv's annotation of a package pyproject.toml names itself.
ROOT = "hpclz (pyproject.toml)"
HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})$")


@dataclass
class Pin:
    requirement: Requirement
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)  # uv's `# via` lines: what requires it


def _pins() -> dict[str, Pin]:
    """The lock by canonical name. A requirement line ends in `\\`, one `--hash=sha256:` option per line follows,
    then its `# via` annotation (one name, or `#   name` lines under it): the pip-tools format uv writes."""
    pins: dict[str, Pin] = {}
    current: Pin | None = None
    in_via = False
    for raw in LOCK.read_text(encoding="utf-8").splitlines():
        line = raw.strip().removesuffix("\\").strip()
        if not raw.startswith((" ", "#")) and line:
            current = Pin(Requirement(line))
            pins[canonicalize_name(current.requirement.name)] = current
            in_via = False
        elif current is not None and (found := HASH.match(line)):
            current.hashes.append(found.group(1))
        elif current is not None and line.startswith("# via"):
            named = line.removeprefix("# via").strip()
            current.via += [named] if named else []
            in_via = not named
        elif current is not None and in_via and line.startswith("#   "):
            current.via.append(line.removeprefix("#").strip())
        elif line and not line.startswith("#"):
            raise AssertionError(f"{LOCK.name}: a line of unknown shape: {raw!r}")
    return pins


def _declared() -> dict[str, Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {canonicalize_name(r.name): r for r in map(Requirement, project["dependencies"])}


def test_the_lock_pins_every_runtime_dependency_to_a_version_pyproject_allows() -> None:
    pins, declared = _pins(), _declared()
    assert set(declared) <= set(pins)
    for name, wanted in declared.items():
        pin = pins[name].requirement
        (exact,) = pin.specifier  # one `==` pin each
        assert exact.operator == "==", pin
        assert wanted.specifier.contains(exact.version, prereleases=True), f"{pin} is outside pyproject's {wanted}"
        assert ROOT in pins[name].via


def test_the_lock_holds_only_what_pyproject_needs() -> None:
    """Every other entry is required by one that is (uv's `# via`), down from pyproject's own; pyproject's are the
    ones uv says pyproject names."""
    pins, declared = _pins(), _declared()
    assert {name for name, pin in pins.items() if ROOT in pin.via} == set(declared)
    reached, todo = set(), list(declared)
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        todo += [other for other, pin in pins.items() if name in {canonicalize_name(via) for via in pin.via}]
    assert reached == set(pins), f"in the lock, needed by nothing pyproject declares: {sorted(set(pins) - reached)}"
    for name, pin in pins.items():
        assert pin.via, f"{name} says nothing requires it"
        assert all(via == ROOT or canonicalize_name(via) in pins for via in pin.via), (name, pin.via)


def test_every_pin_carries_a_sha256_and_an_exact_version() -> None:
    pins = _pins()
    assert len(pins) >= len(_declared())
    for name, pin in pins.items():
        assert pin.hashes, f"{name} has no --hash=sha256: pip's --require-hashes would refuse the whole lock"
        assert len(set(pin.hashes)) == len(pin.hashes), name
        assert [s.operator for s in pin.requirement.specifier] == ["=="], pin.requirement
        assert not pin.requirement.extras and pin.requirement.url is None, pin.requirement
