"""The one definition of "deployment unchanged": plan, preflight, the deploy confirmation and the runner ask here.

A deployment is unchanged when the state records it succeeded with the same template hash (template,
parameters and scope; hpclz.render.model.Deployment.template_hash): submitting it again would change nothing,
so plan shows none of its resources, preflight does not validate it and deploy skips it.
"""

from __future__ import annotations

from hpclz.render.model import Deployment, DeploymentPlan
from hpclz.state.model import StateDocument


def deployment_unchanged(state: StateDocument | None, deployment: Deployment, digest: str | None = None) -> bool:
    """digest: the deployment's template hash when the caller already has it (hashing serializes the template)."""
    # The template hash leaves the resource group out: a deployment moved to another group is not unchanged.
    return state is not None and state.applied(
        deployment.name, digest or deployment.template_hash(), deployment.resource_group
    )


def unchanged_deployments(plan: DeploymentPlan, state: StateDocument | None) -> set[str]:
    return {d.name for d in plan.deployments if deployment_unchanged(state, d)}
