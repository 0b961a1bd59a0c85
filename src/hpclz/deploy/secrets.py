"""The secureString values a plan's deployments take, read from the config (or the `${env:NAME}` it names) only
when deploy or an ARM what-if needs them, and held only in memory."""

from __future__ import annotations

import os
from typing import Any

from pydantic import SecretStr

from hpclz.config.compute import NewAccounting, NoAccounting
from hpclz.config.loader import LoadedConfig
from hpclz.deploy.slurmdbd_password import password_problems
from hpclz.errors import ExitCode, HpclzError
from hpclz.logs import register_secret
from hpclz.render.model import DeploymentPlan
from hpclz.secretscan import ENV_REFERENCE


def _secret_at(loaded: LoadedConfig, path: str) -> str:
    node: Any = loaded.config
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else getattr(node, part, None)
        if node is None:
            raise HpclzError(
                f"{loaded.file}: {path}: secret not found in the config", exit_code=ExitCode.CONFIG_INVALID
            )
    value = node.get_secret_value() if isinstance(node, SecretStr) else str(node)
    ref = ENV_REFERENCE.match(value)
    if ref:
        if ref.group(1) not in os.environ:
            raise HpclzError(
                f"{loaded.file}: {path}: environment variable {ref.group(1)} is not set",
                exit_code=ExitCode.CONFIG_INVALID,
            )
        resolved = os.environ[ref.group(1)]
        try:
            resolved.encode("utf-8")  # bytes that are not UTF-8 arrive as lone surrogates (PEP 383)
        except UnicodeEncodeError:
            raise HpclzError(
                f"{loaded.file}: {path}: environment variable {ref.group(1)} is not valid UTF-8",
                exit_code=ExitCode.CONFIG_INVALID,
            ) from None
        register_secret(resolved)
        _refuse_unusable_accounting_password(loaded, path, resolved, f"environment variable {ref.group(1)}")
        return resolved
    register_secret(value)
    _refuse_unusable_accounting_password(loaded, path, value, "the secret")
    return value


def _refuse_unusable_accounting_password(loaded: LoadedConfig, path: str, value: str, source: str) -> None:
    """Slurm accounting's database password must survive slurmdbd.conf (hpclz.deploy.slurmdbd_password); refused
    by naming its variable and the characters, never the value."""
    accounting = loaded.config.compute.accounting
    if isinstance(accounting, NoAccounting) or path != f"identity.key_vault.secrets.{accounting.password_secret_name}":
        return
    problems = password_problems(value, server_admin=isinstance(accounting, NewAccounting))
    if problems:
        raise HpclzError(
            f"{loaded.file}: {path}: {source} cannot be Slurm accounting's database password "
            f"(compute.accounting.password_secret_name): {'; '.join(problems)}; choose another "
            "(docs/cluster-services.md, Slurm accounting)",
            exit_code=ExitCode.CONFIG_INVALID,
        )


def resolve_secrets(loaded: LoadedConfig, plan: DeploymentPlan) -> dict[str, dict[str, str]]:
    """secureString values per deployment, read only now, held only in memory."""
    return {d.name: {p: _secret_at(loaded, path) for p, path in d.secure_parameters.items()} for d in plan.deployments}


def available_secrets(loaded: LoadedConfig, plan: DeploymentPlan) -> dict[str, dict[str, str]]:
    """The secret values that can be read now (plan runs without them; an unset `${env:...}` is skipped)."""
    found: dict[str, dict[str, str]] = {}
    for d in plan.deployments:
        for parameter, path in d.secure_parameters.items():
            try:
                found.setdefault(d.name, {})[parameter] = _secret_at(loaded, path)
            except HpclzError:
                continue
    return found


NO_SUBSCRIPTION = "no Azure subscription: set metadata.subscription_id in the config or AZURE_SUBSCRIPTION_ID"


def missing_prerequisites(loaded: LoadedConfig, plan: DeploymentPlan) -> list[str]:
    """Everything deploy needs from the environment that is not there, all at once: each secret's unset
    environment variable and the subscription. (Sign-in is proven by the first Azure call; it is not knowable
    before one.)"""
    missing: list[str] = []
    for d in plan.deployments:
        for _parameter, path in sorted(d.secure_parameters.items()):
            try:
                _secret_at(loaded, path)
            except HpclzError as exc:
                problem = exc.message.removeprefix(f"{loaded.file}: ")
                if problem not in missing:
                    missing.append(problem)
    if not loaded.config.metadata.resolved_subscription_id():
        missing.append(NO_SUBSCRIPTION)
    return missing


def require_prerequisites(loaded: LoadedConfig, plan: DeploymentPlan) -> None:
    """One error naming every missing prerequisite, so a deploy is not retried once per missing piece."""
    missing = missing_prerequisites(loaded, plan)
    if missing == [NO_SUBSCRIPTION]:
        raise HpclzError(NO_SUBSCRIPTION, exit_code=ExitCode.USAGE)  # as hpclz.azure.clients says it
    if len(missing) == 1:
        raise HpclzError(f"{loaded.file}: {missing[0]}", exit_code=ExitCode.CONFIG_INVALID)
    if missing:
        listed = "; ".join(f"({n}) {m}" for n, m in enumerate(missing, 1))
        raise HpclzError(
            f"{loaded.file}: deploy needs {len(missing)} things that are missing: {listed}",
            exit_code=ExitCode.CONFIG_INVALID,
        )
