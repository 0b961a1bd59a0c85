"""Where hpclz talks to Azure: cloud, ARM endpoint, credential choice, retry and polling, from the environment.

The config's metadata.cloud picks a sovereign cloud; HPCLZ_AZURE_CLOUD overrides it for one run. HPCLZ_ARM_ENDPOINT (+ HPCLZ_ARM_CA_BUNDLE) points at another
ARM endpoint, such as the test stand-in; only then may HPCLZ_AZURE_TOKEN supply a fixed bearer token.
HPCLZ_GRAPH_ENDPOINT does the same for Microsoft Graph (the same CA bundle); a fixed token is never sent to the
cloud's own Graph.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hpclz.errors import ExitCode, HpclzError


@dataclass(frozen=True)
class Cloud:
    name: str
    arm_endpoint: str
    authority: str
    # Microsoft Graph's root per national cloud: learn.microsoft.com/graph/deployments, "Microsoft Graph and Graph
    # Explorer service root endpoints" (Global https://graph.microsoft.com, US Government L4 https://graph.microsoft.us,
    # China operated by 21Vianet https://microsoftgraph.chinacloudapi.cn).
    graph_endpoint: str = "https://graph.microsoft.com"

    @property
    def scope(self) -> str:
        return self.arm_endpoint.rstrip("/") + "/.default"


CLOUDS = {
    "public": Cloud("public", "https://management.azure.com", "login.microsoftonline.com"),
    "usgov": Cloud(
        "usgov", "https://management.usgovcloudapi.net", "login.microsoftonline.us", "https://graph.microsoft.us"
    ),
    "china": Cloud(
        "china",
        "https://management.chinacloudapi.cn",
        "login.chinacloudapi.cn",
        "https://microsoftgraph.chinacloudapi.cn",
    ),
}


@dataclass(frozen=True)
class AzureSettings:
    cloud: Cloud
    arm_endpoint: str
    ca_bundle: str | None
    static_token: str | None
    poll_interval: float
    retry_total: int
    retry_backoff: float
    retry_after_cap: float = 120.0
    deploy_timeout: float | None = None  # seconds; None: per resource type (hpclz.azure.waiting)
    graph_endpoint: str | None = None  # None: the cloud's own Microsoft Graph

    @property
    def custom_endpoint(self) -> bool:
        return self.arm_endpoint != self.cloud.arm_endpoint

    @property
    def graph_url(self) -> str:
        return (self.graph_endpoint or self.cloud.graph_endpoint).rstrip("/")

    @property
    def graph_scope(self) -> str:
        """The token scope for Graph, `https://graph.microsoft.com/.default` in the public cloud: "Any permission scope
        value (including the .default scope) that contains the Microsoft Graph domain MUST use the domain of the
        Microsoft Graph service root endpoint for the national cloud deployment" (learn.microsoft.com/graph/sdks/
        national-clouds, "Permission scopes")."""
        return self.graph_url + "/.default"

    def graph_refusal(self) -> str | None:
        """Why hpclz must not call Graph with these settings: a fixed token is a test stand-in's, never the cloud's."""
        if self.static_token and self.graph_url == self.cloud.graph_endpoint:
            return "HPCLZ_AZURE_TOKEN is a stand-in's token and HPCLZ_GRAPH_ENDPOINT names no stand-in Graph"
        return None


def _number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise HpclzError(f"{name}={raw!r} is not a number", exit_code=ExitCode.USAGE) from None


def settings_from_env(configured_cloud: str | None = None) -> AzureSettings:
    """Settings from the environment; the cloud is HPCLZ_AZURE_CLOUD, else the config's metadata.cloud."""
    cloud_name = (os.environ.get("HPCLZ_AZURE_CLOUD") or configured_cloud or "public").lower()
    if cloud_name not in CLOUDS:
        raise HpclzError(
            f"HPCLZ_AZURE_CLOUD={cloud_name!r} is not a known cloud; use one of {', '.join(CLOUDS)}",
            exit_code=ExitCode.USAGE,
        )
    cloud = CLOUDS[cloud_name]
    endpoint = os.environ.get("HPCLZ_ARM_ENDPOINT", cloud.arm_endpoint).rstrip("/")
    token = os.environ.get("HPCLZ_AZURE_TOKEN")
    if token and endpoint == cloud.arm_endpoint:
        raise HpclzError(
            "HPCLZ_AZURE_TOKEN is only accepted with a custom HPCLZ_ARM_ENDPOINT; unset it to use your Azure login",
            exit_code=ExitCode.USAGE,
        )
    return AzureSettings(
        cloud=cloud,
        arm_endpoint=endpoint,
        ca_bundle=_ca_bundle(os.environ.get("HPCLZ_ARM_CA_BUNDLE") or None),
        static_token=token or None,
        poll_interval=_number("HPCLZ_POLL_INTERVAL", 10.0),
        retry_total=int(_number("HPCLZ_RETRY_TOTAL", 6)),
        retry_backoff=_number("HPCLZ_RETRY_BACKOFF", 0.8),
        retry_after_cap=_number("HPCLZ_RETRY_AFTER_CAP", 120.0),
        deploy_timeout=_number("HPCLZ_DEPLOY_TIMEOUT", 0.0) or None,
        graph_endpoint=(os.environ.get("HPCLZ_GRAPH_ENDPOINT") or "").rstrip("/") or None,
    )


def _ca_bundle(path: str | None) -> str | None:
    """Load the bundle the way the TLS layer will, so a wrong path or a file of no certificates is one usage
    error here instead of an SSL exception from deep inside the first request."""
    if path is None:
        return None
    import ssl

    if not Path(path).is_file():
        raise HpclzError(f"HPCLZ_ARM_CA_BUNDLE={path!r} is not a file", exit_code=ExitCode.USAGE)
    try:
        ssl.create_default_context(cafile=path)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise HpclzError(
            f"HPCLZ_ARM_CA_BUNDLE={path!r} holds no usable PEM certificates ({exc})", exit_code=ExitCode.USAGE
        ) from None
    return path
