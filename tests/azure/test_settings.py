from __future__ import annotations

from pathlib import Path

import pytest

from hpclz.azure.clients import AzureClients, StaticTokenCredential, make_credential
from hpclz.azure.settings import settings_from_env
from hpclz.errors import ExitCode, HpclzError

ENV = ("HPCLZ_AZURE_CLOUD", "HPCLZ_ARM_ENDPOINT", "HPCLZ_ARM_CA_BUNDLE", "HPCLZ_AZURE_TOKEN", "HPCLZ_GRAPH_ENDPOINT")


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("cloud", "endpoint", "authority"),
    [
        ("public", "https://management.azure.com", "login.microsoftonline.com"),
        ("usgov", "https://management.usgovcloudapi.net", "login.microsoftonline.us"),
        ("china", "https://management.chinacloudapi.cn", "login.chinacloudapi.cn"),
    ],
)
def test_cloud_selects_endpoint_scope_and_authority(
    monkeypatch: pytest.MonkeyPatch, cloud: str, endpoint: str, authority: str
) -> None:
    monkeypatch.setenv("HPCLZ_AZURE_CLOUD", cloud)
    settings = settings_from_env()
    assert settings.arm_endpoint == endpoint and settings.cloud.authority == authority
    assert settings.cloud.scope == f"{endpoint}/.default"
    clients = AzureClients("00000000-0000-0000-0000-000000000001", settings, credential=StaticTokenCredential("t"))
    assert clients.deployments._config.credential_scopes == [f"{endpoint}/.default"]


@pytest.mark.parametrize(
    ("cloud", "graph"),
    [
        # learn.microsoft.com/graph/deployments, "Microsoft Graph and Graph Explorer service root endpoints".
        ("public", "https://graph.microsoft.com"),
        ("usgov", "https://graph.microsoft.us"),
        ("china", "https://microsoftgraph.chinacloudapi.cn"),
    ],
)
def test_cloud_selects_the_graph_root_and_its_scope(monkeypatch: pytest.MonkeyPatch, cloud: str, graph: str) -> None:
    monkeypatch.setenv("HPCLZ_AZURE_CLOUD", cloud)
    settings = settings_from_env()
    assert settings.graph_url == graph and settings.graph_scope == f"{graph}/.default"
    assert settings.graph_refusal() is None
    monkeypatch.setenv("HPCLZ_GRAPH_ENDPOINT", "https://127.0.0.1:8443/")
    assert settings_from_env().graph_url == "https://127.0.0.1:8443"


def test_a_fixed_token_is_never_meant_for_the_clouds_own_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCLZ_ARM_ENDPOINT", "https://127.0.0.1:8444")
    monkeypatch.setenv("HPCLZ_AZURE_TOKEN", "t")
    assert "HPCLZ_GRAPH_ENDPOINT" in (settings_from_env().graph_refusal() or "")
    monkeypatch.setenv("HPCLZ_GRAPH_ENDPOINT", "https://127.0.0.1:8445")
    assert settings_from_env().graph_refusal() is None


def test_default_credential_is_used_without_a_static_token() -> None:
    credential = make_credential(settings_from_env())
    assert type(credential).__name__ == "DefaultAzureCredential"


def test_unknown_cloud_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCLZ_AZURE_CLOUD", "mars")
    with pytest.raises(HpclzError) as caught:
        settings_from_env()
    assert caught.value.exit_code == ExitCode.USAGE and "public, usgov, china" in str(caught.value)


def test_static_token_needs_a_custom_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCLZ_AZURE_TOKEN", "fixed")
    with pytest.raises(HpclzError, match="only accepted with a custom HPCLZ_ARM_ENDPOINT"):
        settings_from_env()
    monkeypatch.setenv("HPCLZ_ARM_ENDPOINT", "https://127.0.0.1:1")
    settings = settings_from_env()
    assert settings.custom_endpoint
    assert make_credential(settings).get_token("x").token == "fixed"


def test_config_cloud_applies_unless_the_environment_overrides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings_from_env("usgov").arm_endpoint == "https://management.usgovcloudapi.net"
    assert settings_from_env(None).cloud.name == "public"
    monkeypatch.setenv("HPCLZ_AZURE_CLOUD", "china")
    assert settings_from_env("usgov").cloud.name == "china"


def test_config_accepts_only_known_clouds() -> None:
    from pydantic import ValidationError

    from hpclz.config.metadata import Metadata

    assert Metadata(name="zone", environment="dev", location="usgovvirginia", cloud="usgov").cloud == "usgov"
    with pytest.raises(ValidationError):
        Metadata(name="zone", environment="dev", location="eastus", cloud="mars")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "is not a file"),
        ("not a certificate\n", "holds no usable PEM certificates"),
        ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "holds no usable PEM certificates"),
    ],
    ids=["missing", "plain-text", "truncated-pem"],
)
def test_bad_ca_bundle_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: str | None, fragment: str
) -> None:
    bundle = tmp_path / "ca.pem"
    if content is not None:
        bundle.write_text(content)
    monkeypatch.setenv("HPCLZ_ARM_ENDPOINT", "https://127.0.0.1:1")
    monkeypatch.setenv("HPCLZ_ARM_CA_BUNDLE", str(bundle))
    with pytest.raises(HpclzError) as caught:
        settings_from_env()
    assert caught.value.exit_code == ExitCode.USAGE and fragment in str(caught.value)


def test_a_real_ca_bundle_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    import certifi

    monkeypatch.setenv("HPCLZ_ARM_ENDPOINT", "https://127.0.0.1:1")
    monkeypatch.setenv("HPCLZ_ARM_CA_BUNDLE", certifi.where())
    assert settings_from_env().ca_bundle == certifi.where()
