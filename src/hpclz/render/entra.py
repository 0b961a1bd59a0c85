"""Who gets an account on the cluster's nodes: the CycleCloud app roles each identity.groups role needs.

The cluster's nodes are CycleCloud's, and CycleCloud's built-in user management creates a local account on every
node for each CycleCloud user with node access; a user with the node admin permission gets sudo there
(learn.microsoft.com/azure/cyclecloud/how-to/user-access, "Built-in user management"). Node access is a role:
"Global Node User: sign in to every node managed by this CycleCloud installation", "Global Node Admin: sign in with
administrator privileges (sudo access) to every node"; Superuser "doesn't grant sign-in access to nodes"
(learn.microsoft.com/azure/cyclecloud/concepts/user-management, "User roles"). With Entra ID sign-in
(identity.cyclecloud_entra) "successful authentication always resets user roles to match the ones set up in Entra ID"
(learn.microsoft.com/azure/cyclecloud/how-to/user-authentication), so the roles are the app's: CCWS's app defines
Administrator, SuperUser, User, Global.Node.User and Global.Node.Admin and gives whoever deploys it SuperUser and
Global.Node.Admin (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/entra/ccwEntraApp.bicep l.105-160, l.224-236).

An app role assignment is a Microsoft Graph object (appRoleAssignedTo), outside ARM, so hpclz renders the
assignments the config implies (artifact `cyclecloud/entra-app-roles.json`), `hpclz deploy` makes the missing ones
through Graph (hpclz.deploy.app_roles) and prints those Graph would not make; docs/entra-login.md.

UIDs: "CycleCloud autogenerates a UID and GID for users" (user-authentication, "Configuring access to cluster
nodes") from 20000 up ("By default, CycleCloud reserves UIDs 20000 and higher for node users": user-management,
"Edit User"). The UID is a field of the user's CycleCloud record, so every node gets the same one and it stays while
the record does; an administrator may set it ("Changing the UID doesn't affect running nodes or change any existing
file permissions on persistent storage").
"""

from __future__ import annotations

import json
from typing import Any

from hpclz.render.zone import Zone

GLOBAL_NODE_USER = "Global.Node.User"
GLOBAL_NODE_ADMIN = "Global.Node.Admin"
# Per identity.groups role: the app roles, and what they give on the nodes. Users get CycleCloud's User role too:
# they sign in to CycleCloud once to create their record and add their SSH key (user-authentication, "Configuring
# access to cluster nodes"). Readers look at Azure resources only: no app role, so no node account.
APP_ROLES: dict[str, tuple[str, ...]] = {
    "admins": ("SuperUser", GLOBAL_NODE_ADMIN),
    "users": ("User", GLOBAL_NODE_USER),
    "readers": (),
}
# The first UID CycleCloud gives a node user (user-management, "Edit User").
FIRST_NODE_UID = 20000


def node_access(roles: tuple[str, ...]) -> str:
    """What a holder of these app roles gets on every node: an account with sudo, an account, or nothing."""
    if GLOBAL_NODE_ADMIN in roles:
        return "account with sudo"
    if GLOBAL_NODE_USER in roles:
        return "account"
    return "none"


def app_role_assignments(zone: Zone) -> list[dict[str, Any]]:
    """One row per group the config names: its object ID, where the config names it, its app roles, its node access."""
    groups = zone.config.identity.groups
    rows = []
    for role, roles in APP_ROLES.items():
        for i, group in enumerate(getattr(groups, role)):
            rows.append(
                {
                    "group": group,
                    "path": f"identity.groups.{role}[{i}]",
                    "app_roles": list(roles),
                    "node_access": node_access(roles),
                }
            )
    return rows


def app_roles_file(zone: Zone) -> str | None:
    """`cyclecloud/entra-app-roles.json`: the assignments to make in CycleCloud's app; None without the app."""
    entra = zone.config.identity.cyclecloud_entra
    if entra is None:
        return None
    document = {
        "app": {"client_id": entra.client_id, "tenant_id": entra.tenant_id},
        "assignments": app_role_assignments(zone),
        "node_uids": {"assigned_by": "CycleCloud, once per user record", "first": FIRST_NODE_UID},
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
