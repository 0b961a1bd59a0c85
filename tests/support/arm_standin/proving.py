"""The proving ground's wiring: who calls the stand-in, and the checks every request and every deployed write pass.

Each bearer token the stand-in accepts stands for one principal. The stand-in's own token is the deploying user,
who holds Owner on the subscription (what a real deploying user needs to create groups, resources and role
assignments), so tests that do not ask otherwise deploy as before; a test that wants a narrower caller makes a
principal with `ProvingGround.principal()` and hands hpclz that principal's token.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from tests.support.arm_standin import managed_lustre, policy
from tests.support.arm_standin.authz import Authorization, Principal, UnknownRole, operation, write_operation
from tests.support.arm_standin.behaviours import Refusal
from tests.support.arm_standin.expressions import Scope, evaluate
from tests.support.arm_standin.user_delegation import DelegationKeys
from tests.support.arm_standin.world import ArmError, DeploymentRun, World

DEPLOYER = Principal("00000000-0000-0000-0000-0000000de910", kind="User", name="deploying user")


@dataclass
class ProvingGround:
    world: World
    token: str
    authorization: Authorization = field(default_factory=Authorization)
    policy_log: policy.PolicyLog = field(default_factory=policy.PolicyLog)
    principals: dict[str, Principal] = field(default_factory=dict)
    bugs: list[str] = field(
        default_factory=list
    )  # the stand-in's own list: a definition it cannot judge fails the test
    # The tenant's "HPC Cache Resource Provider" service principal (its object ID), whose access to a file system's
    # HSM containers Managed Lustre's creation needs (managed_lustre.py); None: not judged.
    storage_cache_rp: str | None = None
    delegation_keys: DelegationKeys = field(default_factory=DelegationKeys)  # the Blob service's user delegation keys

    def __post_init__(self) -> None:
        self.principals[self.token] = DEPLOYER
        self.authorization.grant(DEPLOYER.object_id, "Owner", self.subscription_scope)
        self.world.guards.extend([self._authorized_write, self._policy, self._lustre_hsm])

    @property
    def subscription_scope(self) -> str:
        return f"/subscriptions/{self.world.subscription_id}"

    def principal(self, name: str, groups: tuple[str, ...] = (), kind: str = "User") -> tuple[Principal, str]:
        """A new caller and the bearer token that stands for it; it holds no role until a test grants one."""
        who = Principal(str(uuid.uuid5(uuid.NAMESPACE_URL, f"principal|{name}")), frozenset(groups), kind, name)
        token = f"standin-token-{who.object_id}"
        self.principals[token] = who
        return who, token

    def caller(self, authorization_header: str | None) -> Principal | None:
        if not authorization_header or not authorization_header.startswith("Bearer "):
            return None
        return self.principals.get(authorization_header[len("Bearer ") :])

    def by_object_id(self, object_id: str) -> Principal:
        """The caller with this object ID (its groups included), or a principal of that ID in no group."""
        found = (p for p in list(self.principals.values()) if p.object_id.lower() == object_id.lower())
        return next(found, Principal(object_id, kind="ServicePrincipal"))

    def check_request(self, who: Principal, method: str, path: str) -> None:
        """ARM checks the caller's right to the request's operation at its scope before anything else."""
        action, scope = operation(method, path)
        with self.world.lock:  # deployments' threads store resources meanwhile (World._guarded)
            refusal = self.authorization.check(who, action, scope, self.world.resources)
        if refusal is not None:
            raise ArmError(refusal.status, refusal.code, refusal.message)

    def _authorized_write(self, run: DeploymentRun, resource: dict[str, Any]) -> Refusal | None:
        """A deployment creates each resource as its submitter: the write is checked at the resource's own ID, and a
        refusal fails that resource's operation (Forbidden, AuthorizationFailed: azure-container-apps#215 shows the
        resource's deployment status Forbidden with this error)."""
        if run.principal is None:
            return None
        try:
            refusal = self.authorization.check(
                run.principal, write_operation(str(resource["type"])), str(resource["id"]), self.world.resources
            )
        except UnknownRole as exc:
            self.bugs.append(repr(exc))
            return Refusal("StandInBug", str(exc))
        return Refusal(refusal.code, refusal.message) if refusal else None

    def _lustre_hsm(self, _run: DeploymentRun, resource: dict[str, Any]) -> Refusal | None:
        try:
            return managed_lustre.hsm_access_refusal(
                self.authorization, self.world.resources, self.storage_cache_rp, resource
            )
        except UnknownRole as exc:
            self.bugs.append(repr(exc))
            return Refusal("StandInBug", str(exc))

    def _policy(self, _run: DeploymentRun, resource: dict[str, Any]) -> Refusal | None:
        try:
            refusal = policy.judge(resource, self.world.resources, self.policy_log)
        except policy.PolicyLanguageError as exc:
            self.bugs.append(repr(exc))
            return Refusal("StandInBug", str(exc))
        return Refusal(refusal.code, refusal.message) if refusal else None


def assign_policies(world: World, plan: Any) -> list[str]:
    """Put the policy assignments a rendered plan (hpclz.render.model.DeploymentPlan) makes into the world, at the
    resource groups its templates assign them, as Azure holds them once the zone's first deploy made them: a
    redeploy, and every node CycleCloud creates later, is judged by them. Returns their IDs."""
    made = []
    for d in plan.deployments:
        if not d.resource_group:
            continue
        for r in d.resources():
            if str(r.get("type", "")).lower() != policy.POLICY_ASSIGNMENTS:
                continue
            rid = (
                f"/subscriptions/{world.subscription_id}/resourceGroups/{d.resource_group}"
                f"/providers/Microsoft.Authorization/policyAssignments/{r['name']}"
            )
            # The template's expressions (notScopes' resourceId()) as ARM resolves them in that group.
            scope = Scope(world.subscription_id, d.resource_group, "", "")
            world.resources[rid.lower()] = {
                "id": rid,
                "name": r["name"],
                "type": "Microsoft.Authorization/policyAssignments",
                "properties": evaluate(r.get("properties") or {}, scope),
            }
            made.append(rid)
    return made
