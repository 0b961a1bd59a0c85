"""Every parameter the rendered cluster template references is declared in its [parameters] section.

CycleCloud resolves `$Name` and `${Name}` to a [[[parameter Name]]] of the template
(learn.microsoft.com/azure/cyclecloud/cluster-references/parameter-reference, "The $ references a parameter name";
.../cluster-references/special-parsing, "MyAttribute = $MyParameter", "MyAttribute2 = ${MyParameter2}"), and the
stock template declares every one it uses (Azure/cyclecloud-slurm@50e6739:templates/slurm.txt l.289-1014), its
accounting password as `ParameterType = Password` (l.796-800). Triple-quoted CloudInit scripts are shell text that
CycleCloud passes as is: their `$VAR`s are the shell's, not parameters.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import REPO
from tests.render.conftest import preset_plan

PRESETS = sorted(p.stem for p in (REPO / "configs").glob("*.yaml"))
REFERENCE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
DECLARATION = re.compile(r"^\s*\[\[\[parameter ([A-Za-z_][A-Za-z0-9_]*)\]\]\]\s*$")
PARAMETERS_SECTION = re.compile(r"^\[parameters [^\]]+\]\s*$")
OTHER_TOP_SECTION = re.compile(r"^\[(?!parameters )[^\[\]]+\]\s*$")
TYPE = re.compile(r"^\s*(?:Config\.)?ParameterType\s*=\s*(\S+)\s*$")


def _outside_scripts(template: str) -> list[str]:
    """The template's lines less comments and the bodies of '''-quoted values."""
    lines: list[str] = []
    quoted = False
    for line in template.splitlines():
        if quoted:
            quoted = "'''" not in line
            continue
        if line.count("'''") == 1:
            quoted = True
            line = line.split("'''", 1)[0]
        if line.strip().startswith("#"):
            continue
        lines.append(line)
    return lines


def declarations(template: str) -> dict[str, str]:
    """Parameter name -> its ParameterType (`String` where none is given), from the [parameters] sections only."""
    out: dict[str, str] = {}
    in_parameters = False
    current = ""
    for line in _outside_scripts(template):
        if PARAMETERS_SECTION.match(line):
            in_parameters = True
        elif OTHER_TOP_SECTION.match(line):
            in_parameters = False
        if not in_parameters:
            continue
        if match := DECLARATION.match(line):
            current = match.group(1)
            out[current] = "String"
        elif (match := TYPE.match(line)) and current:
            out[current] = match.group(1)
    return out


def references(template: str) -> set[str]:
    return {m.group(1) for line in _outside_scripts(template) for m in REFERENCE.finditer(line)}


def undeclared(template: str) -> set[str]:
    return references(template) - set(declarations(template))


def _artifacts(stem: str) -> dict[str, str]:
    (compute,) = [d for d in preset_plan(stem).deployments if d.component == "compute"]
    return dict(compute.artifacts)


@pytest.mark.parametrize("stem", PRESETS)
def test_every_referenced_parameter_is_declared(stem: str) -> None:
    template = _artifacts(stem)["cyclecloud/slurm-cluster.txt"]
    assert references(template), "the cluster references its parameters"
    assert undeclared(template) == set()


@pytest.mark.parametrize("stem", PRESETS)
def test_every_declared_parameter_is_referenced_and_given_a_value(stem: str) -> None:
    """slurm-params.json, and the parameters hpclz-cluster-sync reads from Key Vault and ARM at import time, set
    exactly the declared parameters."""
    artifacts = _artifacts(stem)
    template = artifacts["cyclecloud/slurm-cluster.txt"]
    valued = set(json.loads(artifacts["cyclecloud/slurm-params.json"]))
    for name in ("secret-parameters.json", "arm-parameters.json"):
        valued |= set(json.loads(artifacts.get(f"cyclecloud/{name}", "{}")))
    assert set(declarations(template)) == references(template) == valued


@pytest.mark.parametrize("stem", PRESETS)
def test_secrets_are_password_parameters(stem: str) -> None:
    artifacts = _artifacts(stem)
    declared = declarations(artifacts["cyclecloud/slurm-cluster.txt"])
    secrets = set(json.loads(artifacts.get("cyclecloud/secret-parameters.json", "{}")))
    assert {name: declared[name] for name in secrets} == dict.fromkeys(secrets, "Password")
    assert {name for name, kind in declared.items() if kind == "Password"} == secrets


def test_accounting_and_shared_presets_declare_their_parameters() -> None:
    """The conditional declarations are exercised: one preset has accounting, one NetApp shared storage."""
    found = set()
    for stem in PRESETS:
        found |= set(declarations(_artifacts(stem)["cyclecloud/slurm-cluster.txt"]))
    assert {"AccountingPassword", "SharedHomeAddress", "SharedSchedAddress"} <= found


def test_an_undeclared_reference_is_found() -> None:
    """The check fails on the bug it guards: a reference with no declaration, as CycleCloud rejects it."""
    template = _artifacts(PRESETS[0])["cyclecloud/slurm-cluster.txt"]
    broken = template.replace("    UsePublicNetwork = false\n", "    UsePublicNetwork = $UsePublicNet\n", 1)
    assert broken != template
    assert undeclared(broken) == {"UsePublicNet"}
    braced = template.replace("    UsePublicNetwork = false\n", "    UsePublicNetwork = ${UsePublicNet}\n", 1)
    assert undeclared(braced) == {"UsePublicNet"}
    # A declaration outside [parameters] does not count.
    dropped = re.sub(r"\[parameters hpclz\]", "[environment hpclz]", template, count=1)
    assert undeclared(dropped) == references(template)


def test_script_variables_are_not_parameters() -> None:
    template = "[cluster c]\n    [[node n]]\n    CloudInit = '''#!/bin/bash\necho $HOME\n'''\n    A = $P\n"
    assert references(template) == {"P"}
