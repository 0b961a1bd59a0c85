"""HPCLZ-IDN-012's table of what each built-in role reaches, checked against the roles' real JSON (the ARM stand-in's
data/builtin_roles.json, copied from the Azure RBAC built-in roles reference), and its judgement of one grant."""

from __future__ import annotations

import pytest

from hpclz.config.identity import BuiltinRole
from hpclz.render.roles import ROLE_IDS
from hpclz.rules.config.identity import (
    ASSIGN_ROLES,
    CAPABILITIES,
    READ_SECRETS,
    RUN_COMMAND,
    TAKE_IDENTITY,
    beyond_its_own,
)
from tests.support.arm_standin.authz import builtin_roles, role_grants

OPERATIONS = {
    RUN_COMMAND: ("Microsoft.Compute/virtualMachines/runCommands/write", False),
    ASSIGN_ROLES: ("Microsoft.Authorization/roleAssignments/write", False),
    TAKE_IDENTITY: ("Microsoft.ManagedIdentity/userAssignedIdentities/assign/action", False),
    READ_SECRETS: ("Microsoft.KeyVault/vaults/secrets/getSecret/action", True),
}


@pytest.mark.parametrize(
    "role",
    # Monitoring Data Reader's JSON is not shipped (tests/azure/test_standin_authz.py says why): it cannot be checked.
    [r for r in BuiltinRole if r is not BuiltinRole.MONITORING_DATA_READER],
)
def test_the_table_is_what_the_real_role_grants(role: BuiltinRole) -> None:
    definition = builtin_roles()[ROLE_IDS[role]]
    granted = {name for name, (op, data) in OPERATIONS.items() if role_grants(definition, op, data)}
    assert granted == set(CAPABILITIES.get(role, frozenset()))


def test_a_secret_read_is_its_own_only_on_one_of_its_secrets() -> None:
    user = BuiltinRole.KEY_VAULT_SECRETS_USER
    assert beyond_its_own(user, "Microsoft.KeyVault/vaults/kv1/secrets/job-token", {"job-token"}) == set()
    assert beyond_its_own(user, "Microsoft.KeyVault/vaults/kv1/secrets/slurmdb-password", {"job-token"}) == {
        READ_SECRETS
    }
    assert beyond_its_own(user, "Microsoft.KeyVault/vaults/kv1", {"job-token"}) == {READ_SECRETS}
    assert beyond_its_own(user, None, {"job-token"}) == {READ_SECRETS}  # the whole group's vaults
    assert beyond_its_own(BuiltinRole.VM_CONTRIBUTOR, None, set()) == {RUN_COMMAND}
    assert beyond_its_own(BuiltinRole.READER, None, set()) == set()
