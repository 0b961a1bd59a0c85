"""`hpclz destroy`: delete what the state says hpclz created, keeping data unless told otherwise: under the state
lock, after settling the deployments still in flight, through hpclz.deploy.destroy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from hpclz.config.loader import LoadedConfig
from hpclz.errors import ExitCode
from hpclz.output import ResultBody
from hpclz.render.model import Deployment
from hpclz.state.model import StateDocument

DEPLOYMENT_TYPE = "Microsoft.Resources/deployments"


class DestroyResult(ResultBody):
    file: str
    include_data: bool
    outcomes: list[dict[str, Any]] = Field(default_factory=list)
    kept: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    state_location: str | None = None
    cancelled: bool = Field(False, description="The person answered no at the confirmation: nothing was deleted.")
    in_flight: list[dict[str, str]] = Field(
        default_factory=list,
        description="hpclz deployments found running in ARM or never recorded as finished (deployment, arm_state, "
        "why): cancelled where still running and their resources taken into state before anything was deleted.",
    )


def rendered(loaded: LoadedConfig) -> list[Deployment]:
    """The config's deployments, dependants first; none when the config no longer renders."""
    try:
        from hpclz.render.build import build_plan

        waves = build_plan(loaded.config).waves()
        return [d for wave in reversed(waves) for d in wave]
    except Exception:  # a config that no longer renders must not block tearing its landing zone down
        return []


def reverse_order(loaded: LoadedConfig, doc: StateDocument) -> list[str]:
    """Deployment names, dependants first: from the rendered plan, else the reverse of state order."""
    return [d.name for d in rendered(loaded)] or list(reversed(list(doc.deployments)))


def _yes(_doc: StateDocument) -> bool:
    return True


def _ignore(_event: Any) -> None:
    return None


@dataclass(frozen=True)
class DestroyOptions:
    """`confirm` gets the state about to be torn down; `on_event` each deployment settled and resource deleted."""

    config: Path
    include_data: bool = False
    confirm: Callable[[StateDocument], bool] = _yes
    on_event: Callable[[Any], None] = _ignore


def tear_down(loaded: LoadedConfig, opts: DestroyOptions) -> tuple[DestroyResult, ExitCode]:
    result = DestroyResult(file=str(opts.config), include_data=opts.include_data)
    return result, _destroy(result, loaded, opts.confirm, opts.on_event)


def _destroy(
    result: DestroyResult,
    loaded: LoadedConfig,
    confirm: Callable[[StateDocument], bool],
    on_event: Callable[[Any], None],
) -> ExitCode:
    from hpclz.azure.arm import Arm
    from hpclz.azure.backends import open_backend
    from hpclz.azure.clients import AzureClients, make_credential, resolve_subscription
    from hpclz.azure.errors import azure_errors
    from hpclz.azure.settings import settings_from_env
    from hpclz.deploy.destroy import Action, Destroyer, outcome_dict
    from hpclz.deploy.in_flight import find_in_flight, settle, still_running
    from hpclz.deploy.preflight import check_access
    from hpclz.state.identity import ZoneIdentity, refuse_foreign_state

    include_data = result.include_data
    file = Path(loaded.file)
    settings = settings_from_env(loaded.config.metadata.cloud)
    credential = make_credential(settings)
    backend = open_backend(loaded.config, base_dir=file.parent, credential=credential, config_file=str(file))
    result.state_location = backend.location
    with backend.lock("destroy"):
        doc = backend.read()
        # Destroy deletes every ID the state lists: another zone's state would tear that zone down.
        refuse_foreign_state(doc, ZoneIdentity.of_config(loaded.config), backend.location, loaded.file)
        if doc is None or not (doc.resources or _any_running(doc) or doc.app_role_assignments):
            return ExitCode.OK
        # The state knows where hpclz deployed: deleting in another subscription would miss it all.
        subscription = resolve_subscription(doc.subscription_id or loaded.config.metadata.resolved_subscription_id())
        arm = Arm(AzureClients(subscription, settings, credential))
        check_access(arm)
        planned = rendered(loaded)
        with azure_errors("destroy"):
            found = find_in_flight(arm, doc, planned)
        for item in found:
            on_event(item)
        result.in_flight = [f.as_dict() for f in found]
        if not doc.resources and not found and not doc.app_role_assignments:
            return ExitCode.OK
        if not confirm(doc):
            # A "no" is a decision, not an interruption: exit 1 (docs/exit-codes.md); Ctrl-C at the prompt is 130.
            result.cancelled = True
            return ExitCode.FAILED
        if found:
            # Cancel and wait first: deleting while a run still creates would race it (hpclz.deploy.in_flight).
            with azure_errors("destroy"):
                doc, failures = settle(
                    arm, doc, found, backend.write, on_event=on_event, poll_interval=settings.poll_interval
                )
            racing = still_running(failures)
            if racing:
                result.outcomes = [
                    {"id": f.target or name, "type": DEPLOYMENT_TYPE, "action": "failed", "reason": f.one_line()}
                    for name, f in racing.items()
                ]
                result.failed = [o["id"] for o in result.outcomes]
                return ExitCode.AZURE_ERROR
        destroyer = Destroyer(arm, doc, [d.name for d in planned] or reverse_order(loaded, doc), on_event, planned)
        with azure_errors("destroy"):
            remaining = destroyer.run(include_data)
        remaining = backend.write(remaining)
        remaining, revoked = _revoke_app_roles(arm, remaining, backend.write, on_event)
    outcomes = destroyer.outcomes + revoked
    result.outcomes = [outcome_dict(o) for o in outcomes]
    result.kept = [o.id for o in outcomes if o.action is Action.KEPT]
    result.failed = [o.id for o in outcomes if o.action is Action.FAILED]
    return ExitCode.AZURE_ERROR if result.failed else ExitCode.OK


def _revoke_app_roles(
    arm: Any, doc: StateDocument, save: Callable[[StateDocument], StateDocument], on_event: Callable[[Any], None]
) -> tuple[StateDocument, list[Any]]:
    """The app role assignments deploy made in CycleCloud's Entra app (Microsoft Graph), and no other."""
    if not doc.app_role_assignments:
        return doc, []
    from hpclz.azure.graph import Graph
    from hpclz.deploy.app_roles import revoke

    return revoke(Graph(arm.clients.settings, arm.clients.credential), doc, save, on_event)


def _any_running(doc: StateDocument) -> bool:
    from hpclz.state.model import DeploymentStatus

    return any(r.status is DeploymentStatus.RUNNING for r in doc.deployments.values())
