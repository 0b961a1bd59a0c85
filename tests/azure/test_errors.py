from __future__ import annotations

import json

from hpclz.azure.errors import innermost

NESTED = {
    "error": {
        "code": "DeploymentFailed",
        "message": "At least one resource deployment operation failed.",
        "details": [
            {
                "code": "ResourceDeploymentFailure",
                "target": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/bastionHosts/bas1",
                "message": "The resource operation completed with terminal provisioning state 'Failed'.",
                "details": [{"code": "PublicIpAddressInUse", "message": "Public IP pip1 is in use."}],
            }
        ],
    }
}


def test_innermost_error_keeps_the_nearest_target() -> None:
    failure = innermost(NESTED)
    assert failure.code == "PublicIpAddressInUse"
    assert failure.target and failure.target.endswith("bastionHosts/bas1")
    assert failure.one_line() == f"PublicIpAddressInUse: Public IP pip1 is in use. (target: {failure.target})"


def test_error_json_inside_a_message_is_unwrapped() -> None:
    wrapped = {"code": "BadRequest", "message": json.dumps({"error": {"code": "SkuNotAvailable", "message": "no"}})}
    assert innermost(wrapped).code == "SkuNotAvailable"


def test_missing_error_is_still_one_line() -> None:
    assert innermost(None).one_line().startswith("Unknown:")


def test_a_storage_error_code_is_the_code_the_service_sent() -> None:
    """azure-storage-blob hands error_code over as StorageErrorCode, a str enum: its str() on Python 3.11 is the enum's
    name, which no hint or message should show."""
    from azure.storage.blob import StorageErrorCode

    from hpclz.azure.errors import storage_code

    class Refused(Exception):
        def __init__(self, code: object) -> None:
            self.error_code = code

    assert str(StorageErrorCode.AUTHORIZATION_FAILURE) != "AuthorizationFailure"
    assert storage_code(Refused(StorageErrorCode.AUTHORIZATION_FAILURE)) == "AuthorizationFailure"
    assert storage_code(Refused("ContainerNotFound")) == "ContainerNotFound"
    assert storage_code(Refused(None)) == ""
    assert storage_code(ValueError("no code")) == ""
