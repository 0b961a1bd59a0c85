"""No secret ever reaches the state: a planted one is refused on both backends and found nowhere afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from hpclz.config.identity import NewKeyVault
from hpclz.config.root import LandingZoneConfig
from hpclz.secretscan import KNOWN_PATTERNS, looks_like_secret
from hpclz.state.errors import SecretInStateError
from hpclz.state.guard import SecretGuard, config_secrets
from tests.state.conftest import PLANTED_SECRET, OpenBackend, sample_state

STORAGE_KEY = "DefaultEndpointsProtocol=https;AccountName=st1;AccountKey=" + "Zm9vYmFy" * 8 + "=="


def _everything_stored(backend: object, root: Path) -> bytes:
    """Every byte the backend could have written: all files under the test folder, or all blobs of its container."""
    container = getattr(backend, "_container", None)
    if container is None:
        return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())
    blobs = [item.name for item in container.list_blobs()]
    return b"".join(container.get_blob_client(name).download_blob().readall() for name in blobs)


@pytest.mark.parametrize(
    ("where", "value"),
    [("outputs", PLANTED_SECRET), ("property", f"prefix-{PLANTED_SECRET}-suffix"), ("outputs", STORAGE_KEY)],
)
def test_a_planted_secret_is_refused_and_never_written(
    open_state: OpenBackend, config: LandingZoneConfig, tmp_path: Path, where: str, value: str
) -> None:
    backend = open_state()
    clean = backend.write(sample_state(config))
    doc = clean.model_copy(deep=True)
    if where == "outputs":
        doc.outputs["licence"] = value
    else:
        doc.resources[0].properties["customData"] = value
    with pytest.raises(SecretInStateError) as refused:
        backend.write(doc)
    message = str(refused.value)
    assert PLANTED_SECRET not in message and "Zm9vYmFy" not in message
    assert ("outputs.licence" if where == "outputs" else "resources[0].properties.customData") in message
    stored = _everything_stored(backend, tmp_path)
    assert stored, "the clean write should have stored something to search"
    assert PLANTED_SECRET.encode() not in stored and b"Zm9vYmFy" not in stored
    assert open_state().read() == clean


def test_config_secrets_are_found_by_path() -> None:
    vault = NewKeyVault(secrets={"a-key": SecretStr("longenough1"), "tiny": SecretStr("abc")})
    found = config_secrets(vault)
    assert found == {"secrets[a-key]": "longenough1"}


def test_an_env_placeholder_guards_the_value_deploy_will_resolve(
    config: LandingZoneConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRICING_LICENCE_KEY", "resolved-at-deploy-77")
    vault = NewKeyVault(secrets={"pricing": SecretStr("${env:PRICING_LICENCE_KEY}")})
    guard = SecretGuard.for_config(
        config.model_copy(update={"identity": config.identity.model_copy(update={"key_vault": vault})})
    )
    guard.check({"outputs": {"ok": "${env:PRICING_LICENCE_KEY}"}}, "here")  # the placeholder itself is no secret
    with pytest.raises(SecretInStateError, match=r"outputs\.x holds a secret \(the value of identity\.key_vault"):
        guard.check({"outputs": {"x": "resolved-at-deploy-77"}}, "here")


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
        "https://st1.blob.core.windows.net/c/b?sv=2022-11-02&sig=abcdefghijklmnopqrstuvwxyz0123%3D",
        "abc8Q~" + "x" * 34,
    ],
)
def test_well_known_credential_shapes_are_refused(text: str) -> None:
    with pytest.raises(SecretInStateError):
        SecretGuard().check({"outputs": {"value": text}}, "here")


def test_ordinary_state_passes_the_guard(config: LandingZoneConfig) -> None:
    doc = sample_state(config)
    SecretGuard.for_config(config).check_text(doc.model_dump_json(), "here")


def test_a_value_registered_at_deploy_time_is_guarded() -> None:
    guard = SecretGuard()
    guard.add("the resolved admin password", "Tr0ub4dor&3-long")
    with pytest.raises(SecretInStateError, match="the resolved admin password"):
        guard.check_text('{"outputs": {"p": "Tr0ub4dor&3-long"}}', "here")


@pytest.mark.parametrize(
    ("outputs", "refused"),
    [
        ({"storagePrimaryKey": "q" * 40}, True),
        ({"adminPassword": "hunter2-hunter2"}, True),
        ({"key1": "c2VjcmV0a2V5dmFsdWU="}, True),
        ({"adminPassword": "https://kv-energy.vault.azure.net/secrets/admin"}, False),
        ({"keyVaultSecretName": "licence-key"}, False),
        ({"adminPassword": "[parameters('adminPassword')]"}, False),
        ({"adminPassword": "[[literal-in-brackets"}, True),
        ({"passwordExpiryDays": "90"}, False),
    ],
)
def test_outputs_named_like_credentials_must_hold_references(outputs: dict[str, str], refused: bool) -> None:
    document = {"outputs": outputs}
    if refused:
        with pytest.raises(SecretInStateError, match="credential-like name"):
            SecretGuard().check(document, "here")
    else:
        SecretGuard().check(document, "here")


def test_a_masked_config_secret_under_a_credential_name_is_no_secret(config: LandingZoneConfig) -> None:
    """The applied config keeps identity.key_vault.secrets masked as pydantic dumps a SecretStr; a secret named
    like a credential (the energy preset's slurmdb-password) must not stop state from being written, while a
    literal under the same name still does."""
    vault = NewKeyVault(secrets={"slurmdb-password": SecretStr("${env:SLURMDB_PASSWORD}")})
    dumped = vault.model_dump(mode="json")
    assert dumped["secrets"] == {"slurmdb-password": "**********"}
    guard = SecretGuard.for_config(config)
    guard.check({"applied_config": {"identity": {"key_vault": dumped}}}, "here")
    with pytest.raises(SecretInStateError, match="credential-like name 'slurmdb-password'"):
        guard.check({"applied_config": {"secrets": {"slurmdb-password": "hunter2-literal"}}}, "here")


@pytest.mark.parametrize("label", sorted(KNOWN_PATTERNS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_text_a_credential_pattern_matches_is_caught_whatever_surrounds_it(
    label: str, data: st.DataObject
) -> None:
    """looks_like_secret runs a pattern only on a text holding a literal the pattern needs: a text the pattern
    matches must never be passed over by that shortcut."""
    text = data.draw(st.from_regex(KNOWN_PATTERNS[label]))
    assert looks_like_secret(text) is not None, text
