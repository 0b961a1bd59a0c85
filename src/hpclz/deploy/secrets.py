"""The secureString values a plan's deployments take, read from the config (or the `${env:NAME}` it names) only
when deploy or an ARM what-if needs them, and held only in memory."""

from __future__ import annotations

import os
from typing import Any

from pydantic import SecretStr

from hpclz.config.loader import LoadedConfig
from hpclz.errors import ExitCode, HpclzError
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
        return os.environ[ref.group(1)]
    return value


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
