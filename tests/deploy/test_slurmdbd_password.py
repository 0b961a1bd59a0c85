"""Slurm accounting's database password is refused when deploy reads it if slurmdbd.conf would not carry it whole
(hpclz.deploy.slurmdbd_password cites Slurm's parser), or, on a server hpclz creates, if Azure Database for MySQL
would not take it; the error names the variable and the characters, never the password, and nothing reaches ARM."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpclz.config.loader import load_config
from hpclz.deploy.secrets import resolve_secrets
from hpclz.deploy.slurmdbd_password import password_problems
from hpclz.errors import ExitCode, HpclzError
from hpclz.render.build import build_plan
from tests.conftest import REPO, RunCli, require
from tests.support.arm_standin import ArmStandIn
from tests.support.slurm import slurm_available, start_cluster, stop_cluster
from tests.support.slurm_power import wait_until

NEW_SERVER = REPO / "configs" / "energy.yaml"  # compute.accounting mode new
EXISTING_SERVER = REPO / "configs" / "finance.yaml"  # compute.accounting mode existing

# A complex password with every printable ASCII character Slurm's parser leaves alone: a double quote inside
# (only a value wrapped in quotes is unquoted), `=`, `$`, `'` and the rest.
ACCEPTED = "Sl4rm-Acct!$%&'()*+,./:;<=>?@[]^_`{|}~\"9"

# Each character slurmdbd.conf's parser cuts or drops, inside a password Azure would otherwise take, and how the
# error names it.
REFUSED = {
    "Acct#Pass-42": "'#'",
    "Acct\\Pass-42": "'\\'",
    "Acct Pass-42": "a space",
    "Acct\tPass-42": "U+0009",
    "Acct\nPass-42": "U+000A",
    "Acct\rPass-42": "U+000D",
    "Acct\vPass-42": "U+000B",
    "Acct\fPass-42": "U+000C",
}


@pytest.mark.parametrize("password", REFUSED)
@pytest.mark.parametrize("server_admin", [True, False])
def test_each_character_slurmdbd_conf_breaks_is_named(password: str, server_admin: bool) -> None:
    problems = password_problems(password, server_admin=server_admin)
    assert problems == [f"it holds {REFUSED[password]}, which slurmdbd.conf's parser cuts or drops"]


def test_a_password_wrapped_in_double_quotes_is_refused() -> None:
    assert password_problems('"Acct-Pass-42"', server_admin=False) == [
        "it is wrapped in double quotes, which slurmdbd.conf's parser takes off"
    ]
    assert password_problems('"Acct"Pass-42"', server_admin=False) == []  # the unquoted value is taken whole


def test_a_complex_password_is_accepted() -> None:
    assert password_problems(ACCEPTED, server_admin=True) == []
    assert password_problems("Aa1" + "x" * 125, server_admin=True) == []  # 128 characters, Azure's longest


@pytest.mark.parametrize(
    ("password", "problem"),
    [
        ("Ab1-xyz", "it is 7 characters long, and Azure Database for MySQL takes 8 to 128"),
        ("Aa1" + "x" * 126, "it is 129 characters long, and Azure Database for MySQL takes 8 to 128"),
        ("acctpass-only", "it mixes 2 of the 4 kinds of character"),
        ("ACCTPASS42", "it mixes 2 of the 4 kinds of character"),
        ("acctpassword", "it mixes 1 of the 4 kinds of character"),
    ],
)
def test_azure_rules_apply_to_a_server_hpclz_creates(password: str, problem: str) -> None:
    (found,) = password_problems(password, server_admin=True)
    assert found.startswith(problem)
    # A server someone else runs has its own rules, which hpclz does not know.
    assert password_problems(password, server_admin=False) == []


def test_every_problem_is_named_at_once() -> None:
    assert len(password_problems("a b#", server_admin=True)) == 3


@pytest.mark.parametrize("password", [*REFUSED, '"Acct-Pass-42"', "acctpassword"])
def test_resolving_a_refused_password_names_the_variable_never_the_value(
    password: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = load_config(str(NEW_SERVER))
    monkeypatch.setenv("SLURMDB_PASSWORD", password)
    with pytest.raises(HpclzError) as caught:
        resolve_secrets(loaded, build_plan(loaded.config))
    message = caught.value.message
    assert "identity.key_vault.secrets.slurmdb-password: environment variable SLURMDB_PASSWORD cannot be" in message
    assert password not in message and "\n" not in message
    assert caught.value.exit_code == ExitCode.CONFIG_INVALID


def test_resolving_an_accepted_password_gives_it_to_every_deployment_that_takes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loaded = load_config(str(NEW_SERVER))
    monkeypatch.setenv("SLURMDB_PASSWORD", ACCEPTED)
    values = [v for params in resolve_secrets(loaded, build_plan(loaded.config)).values() for v in params.values()]
    assert values.count(ACCEPTED) == 2  # the accounting server's administrator, and the Key Vault secret


def test_an_existing_server_takes_a_password_azure_would_refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_config(str(EXISTING_SERVER))
    monkeypatch.setenv("PRICING_LICENCE_KEY", "licence-Value-1")  # the preset's other secret
    monkeypatch.setenv("SLURMDB_PASSWORD", "acctpassword")
    values = [v for params in resolve_secrets(loaded, build_plan(loaded.config)).values() for v in params.values()]
    assert "acctpassword" in values
    monkeypatch.setenv("SLURMDB_PASSWORD", "acct#password")
    with pytest.raises(HpclzError, match=r"SLURMDB_PASSWORD cannot be .*it holds '#'"):
        resolve_secrets(loaded, build_plan(loaded.config))


def test_deploy_refuses_it_before_asking_azure(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    password = "Acct#Pass 42"
    monkeypatch.setenv("SLURMDB_PASSWORD", password)
    before = sorted(p.name for p in zone.parent.rglob("*"))
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == ExitCode.CONFIG_INVALID, result.stderr
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1 and error.startswith("error: ") and "Traceback" not in error
    assert "environment variable SLURMDB_PASSWORD cannot be Slurm accounting's database password" in error
    assert "it holds '#', a space" in error
    assert password not in result.stdout + result.stderr
    assert arm.log == [] and not arm.world.deployments  # not one request reached ARM
    assert sorted(p.name for p in zone.parent.rglob("*")) == before  # no state, no file


@pytest.mark.slurm
def test_real_slurm_parses_the_refused_passwords_other_than_written() -> None:
    """Slurm's own parser on the values, as StoragePass= would carry them: string keys of slurm.conf go through the
    same parse_config.c as slurmdbd.conf, and Debian's Slurm 22.05.8 has the same `_strip_comments`, `_strip_escapes`,
    `_strip_continuation` and `keyvalue_pattern` as slurm-25-11-5-1 (compared in SchedMD/slurm at slurm-22-05-8-1).
    The refused ones come back cut, unescaped or unquoted; the accepted complex one comes back whole. (A space is left
    out: what follows it parses as a key of its own.)"""
    require(slurm_available(), "Slurm (slurmctld, slurmd, munged, sinfo)")
    written = {
        "JobCompLoc": ("Acct#Pass-42", "Acct"),
        "JobCompHost": ("Acct\\Pass-42", "AcctPass-42"),
        "JobCompUser": ('"Acct-Pass-42"', "Acct-Pass-42"),
        "MailProg": (ACCEPTED, ACCEPTED),
    }
    for key, (value, _) in written.items():
        assert bool(password_problems(value, server_admin=True)) == (key != "MailProg"), key
    cluster = start_cluster(["p1"])
    try:
        cluster.wait_idle()
        with cluster.conf.open("a") as conf:
            conf.write("".join(f"{key}={value}\n" for key, (value, _) in written.items()))
        cluster.client("scontrol", "reconfigure")

        def shown() -> dict[str, str]:
            lines = cluster.client("scontrol", "show", "config").splitlines()
            return {k.strip(): v.strip() for k, _, v in (line.partition("=") for line in lines)}

        wait_until(lambda: shown().get("MailProg") == ACCEPTED, "slurmctld's reconfigure")
        assert {key: shown()[key] for key in written} == {key: parsed for key, (_, parsed) in written.items()}
    finally:
        stop_cluster(cluster)
