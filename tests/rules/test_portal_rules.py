"""Passing cases of the portal rules beyond the presets: a vault secret, private ranges, no Bastion but a hub."""

from __future__ import annotations

from hpclz.services.validate import check_config
from tests.rules.cases import Case, _all, _set, load_case


def _portal_findings(case: Case) -> list[str]:
    reported, _ = check_config(load_case(case, "portal"))
    return [f"{f.rule_id} {f.path}: {f.message}" for f in reported if f.rule_id.startswith("HPCLZ-PRT-")]


def test_a_secret_kept_in_the_vault_and_private_ranges_pass() -> None:
    case = Case(
        "ai-training",
        _all(
            _set("identity.key_vault.secrets.ood-client-secret", "${env:OOD_CLIENT_SECRET}"),
            _set("portal.oidc.client_secret_name", "ood-client-secret"),
            # RFC 1918 and RFC 6598 (100.64.0.0/10, carrier-grade NAT and some VPN pools) ranges.
            _set("portal.allowed_cidrs", ["10.8.0.0/16", "172.20.0.0/14", "192.168.10.0/24", "100.64.12.0/22"]),
            _set("portal.server_name", "ood.hpc.example.com"),
        ),
    )
    assert _portal_findings(case) == []


def test_a_private_range_reaches_it_without_bastion() -> None:
    case = Case(
        "ai-training",
        _all(_set("network.bastion.enabled", False), _set("portal.allowed_cidrs", ["10.8.0.0/16"])),
    )
    assert _portal_findings(case) == []


def test_nothing_is_said_about_a_portal_that_is_off() -> None:
    case = Case("ai-training", _all(_set("portal.enabled", False), _set("storage.shared", {"mode": "disabled"})))
    assert _portal_findings(case) == []
