"""Turn Azure SDK exceptions into one actionable line: the innermost ARM error, its code and target."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hpclz.errors import ExitCode, HpclzError


@dataclass(frozen=True)
class ArmFailure:
    code: str
    message: str
    target: str | None = None

    def one_line(self) -> str:
        where = f" (target: {self.target})" if self.target else ""
        return f"{self.code}: {self.message}{where}"


def innermost(error: dict[str, Any] | None, target: str | None = None) -> ArmFailure:
    """Follow `details` down to the error that says what really went wrong, keeping the nearest target.

    ARM wraps a failed resource as DeploymentFailed > ResourceDeploymentFailure(target) > the provider's
    error; the outer two only say that something failed.
    """
    if not error:
        return ArmFailure("Unknown", "ARM reported a failure without details", target)
    if "error" in error and isinstance(error["error"], dict):
        error = error["error"]
    target = error.get("target") or target
    details = [d for d in error.get("details") or [] if isinstance(d, dict)]
    if details:
        return innermost(details[0], target)
    message = str(error.get("message") or "").strip()
    if message.startswith("{"):
        try:
            return innermost(json.loads(message), target)
        except ValueError:
            pass
    return ArmFailure(str(error.get("code") or "Unknown"), message, target)


# DefaultAzureCredential's chain, in the words a user knows (learn.microsoft.com/python/api/azure-identity/
# azure.identity.defaultazurecredential). Its failure message lists each as "\t<Name>: <why>" after
# "Attempted credentials:" (real output: github.com/Azure/azure-cli/issues/31648,
# github.com/dask/dask-cloudprovider/issues/340).
CREDENTIAL_NAMES = {
    "EnvironmentCredential": "environment variables",
    "WorkloadIdentityCredential": "workload identity",
    "ManagedIdentityCredential": "managed identity",
    "SharedTokenCacheCredential": "shared token cache",
    "VisualStudioCodeCredential": "VS Code",
    "AzureCliCredential": "Azure CLI",
    "AzurePowerShellCredential": "Azure PowerShell",
    "AzureDeveloperCliCredential": "Azure Developer CLI",
    "InteractiveBrowserCredential": "browser sign-in",
}
_ATTEMPT = re.compile(r"^\s*-?\s*(\w+Credential):", re.M)
SIGN_IN_HINT = (
    "sign in with `az login` (then `az account set --subscription <id>`), or set AZURE_TENANT_ID, "
    "AZURE_CLIENT_ID and AZURE_CLIENT_SECRET for a service principal; `hpclz --verbose ...` shows each attempt"
)


def storage_code(exc: object) -> str:
    """A storage error's code as the service sent it ("AuthorizationFailure"), or "". azure-storage-blob hands it over
    as a StorageErrorCode, a str enum whose str() on Python 3.11 is "StorageErrorCode.AUTHORIZATION_FAILURE"."""
    code = getattr(exc, "error_code", None) or ""
    return str(getattr(code, "value", code))


def sign_in_failure(message: str) -> str | None:
    """One line for a credential chain that produced no token; None when `message` is not such a failure."""
    if "Attempted credentials" not in message and "failed to retrieve a token" not in message:
        return None
    tried = [CREDENTIAL_NAMES.get(name, name) for name in _ATTEMPT.findall(message.split("credentials", 1)[-1])]
    what = f" (tried {', '.join(dict.fromkeys(tried))})" if tried else ""
    return f"Azure sign-in failed{what}: {SIGN_IN_HINT}"


def _body(exc: Any) -> dict[str, Any] | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    try:
        body = response.json()
    except Exception:  # a non-JSON error page from a proxy says nothing more than the status
        return None
    return body if isinstance(body, dict) else None


def describe(exc: Exception) -> ArmFailure:
    body = _body(exc)
    if body:
        return innermost(body)
    status = getattr(exc, "status_code", None)
    return ArmFailure(f"HTTP{status}" if status else type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")


class WaitCancelled(Exception):
    """The run was stopped (Ctrl-C) while hpclz waited between retries of an Azure call."""


def sdk_error() -> type[Exception]:
    """azure-core's base error, for callers outside the adapter that catch it (they must not import the SDK)."""
    from azure.core.exceptions import AzureError

    return AzureError


@contextmanager
def azure_errors(doing: str) -> Iterator[None]:
    """Raise HpclzError(AZURE_ERROR) naming what hpclz was doing and what ARM said."""
    from azure.core.exceptions import AzureError, ClientAuthenticationError, ServiceRequestError

    try:
        yield
    except ClientAuthenticationError as exc:
        no_token = sign_in_failure(str(exc.message or exc))
        if no_token:
            raise HpclzError(f"{doing}: {no_token}", exit_code=ExitCode.AZURE_ERROR) from None
        raise HpclzError(
            f"{doing}: Azure rejected the credentials: {describe(exc).one_line()}",
            exit_code=ExitCode.AZURE_ERROR,
            hint="run `az login`, or set a service principal / managed identity for DefaultAzureCredential",
        ) from None
    except ServiceRequestError as exc:
        raise HpclzError(
            f"{doing}: cannot reach Azure Resource Manager: {exc}", exit_code=ExitCode.AZURE_ERROR
        ) from None
    except AzureError as exc:
        raise HpclzError(f"{doing}: {describe(exc).one_line()}", exit_code=ExitCode.AZURE_ERROR) from None
