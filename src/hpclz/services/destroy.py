"""`hpclz destroy`: delete what the state says hpclz created, keeping data unless told otherwise."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from hpclz.config.loader import LoadedConfig, load_config
from hpclz.errors import ExitCode
from hpclz.output import CommandResult, ResultBody
from hpclz.state.model import StateDocument


class DestroyResult(ResultBody):
    file: str
    include_data: bool
    outcomes: list[dict[str, Any]] = Field(default_factory=list)
    kept: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    state_location: str | None = None
    cancelled: bool = Field(False, description="The person answered no at the confirmation: nothing was deleted.")


def reverse_order(loaded: LoadedConfig, doc: StateDocument) -> list[str]:
    """Deployment names, dependants first: from the rendered plan, else the reverse of state order."""
    try:
        from hpclz.render.build import build_plan

        waves = build_plan(loaded.config).waves()
        return [d.name for wave in reversed(waves) for d in wave]
    except Exception:  # a config that no longer renders must not block tearing its landing zone down
        return list(reversed(list(doc.deployments)))


def destroy(
    path: str | Path,
    *,
    include_data: bool = False,
    confirm: Callable[[StateDocument], bool] = lambda _doc: True,
    on_event: Callable[[Any], None] = lambda _o: None,
) -> CommandResult[DestroyResult]:
    result = DestroyResult(file=str(path), include_data=include_data)
    code = _destroy(result, path, confirm, on_event)
    return CommandResult(command="destroy", payload=result, exit_code=code)


def _destroy(
    result: DestroyResult,
    path: str | Path,
    confirm: Callable[[StateDocument], bool],
    on_event: Callable[[Any], None],
) -> ExitCode:
    from hpclz.azure.arm import Arm
    from hpclz.azure.clients import AzureClients, make_credential, resolve_subscription
    from hpclz.azure.errors import azure_errors
    from hpclz.azure.settings import settings_from_env
    from hpclz.deploy.backends import open_backend
    from hpclz.deploy.destroy import Action, Destroyer, outcome_dict
    from hpclz.deploy.preflight import check_access
    from hpclz.state.identity import ZoneIdentity, refuse_foreign_state

    loaded = load_config(path)
    include_data = result.include_data
    file = Path(loaded.file)
    settings = settings_from_env(loaded.config.metadata.cloud)
    credential = make_credential(settings)
    backend = open_backend(loaded.config, base_dir=file.parent, credential=credential, config_file=str(file))
    result.state_location = backend.location
    with backend.lock("destroy"):
        doc = backend.read()
        # Destroy deletes every ID the state lists: another zone's state would tear that zone down.
        refuse_foreign_state(doc, ZoneIdentity.of_config(loaded.config), backend.location, str(path))
        if doc is None or not doc.resources:
            return ExitCode.OK
        # The state knows where hpclz deployed: deleting in another subscription would miss it all.
        subscription = resolve_subscription(doc.subscription_id or loaded.config.metadata.resolved_subscription_id())
        arm = Arm(AzureClients(subscription, settings, credential))
        check_access(arm)
        if not confirm(doc):
            # A "no" is a decision, not an interruption: exit 1 (docs/exit-codes.md); Ctrl-C at the prompt is 130.
            result.cancelled = True
            return ExitCode.FAILED
        destroyer = Destroyer(arm, doc, reverse_order(loaded, doc), on_event)
        with azure_errors("destroy"):
            remaining = destroyer.run(include_data)
        backend.write(remaining)
    result.outcomes = [outcome_dict(o) for o in destroyer.outcomes]
    result.kept = [o.id for o in destroyer.outcomes if o.action is Action.KEPT]
    result.failed = [o.id for o in destroyer.outcomes if o.action is Action.FAILED]
    return ExitCode.AZURE_ERROR if result.failed else ExitCode.OK
