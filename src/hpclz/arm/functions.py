"""ARM template functions, from learn.microsoft.com/azure/azure-resource-manager/templates/template-functions.

ARM matches function names case-insensitively, so the sets hold lower-case names.
"""

from __future__ import annotations

_BY_CATEGORY: dict[str, str] = {
    "any": "any",
    "array": "array concat contains createArray empty first flatten indexOf intersection last lastIndexOf length "
    "max min range skip take union tryGet",
    "cidr": "parseCidr cidrSubnet cidrHost",
    "comparison": "coalesce equals greater greaterOrEquals less lessOrEquals",
    "date": "dateTimeAdd dateTimeFromEpoch dateTimeToEpoch utcNow",
    "deployment": "deployer deployment environment parameters variables",
    "lambda": "filter groupBy map mapValues reduce sort toObject lambdaVariables",
    "logical": "and bool false if not or true",
    "numeric": "add copyIndex div float int mod mul sub",
    "object": "createObject items json null objectKeys shallowMerge",
    "resource": "extensionResourceId list listAccountSas listKeys listSecrets listCredentials listServiceSas "
    "managementGroupResourceId pickZones providers reference references resourceId subscriptionResourceId "
    "tenantResourceId",
    "scope": "managementGroup resourceGroup subscription tenant",
    "string": "base64 base64ToJson base64ToString dataUri dataUriToString endsWith format guid join newGuid padLeft "
    "replace split startsWith string substring toLower toUpper trim uniqueString uri uriComponent "
    "uriComponentToString",
}

ARM_FUNCTIONS: frozenset[str] = frozenset(name.lower() for names in _BY_CATEGORY.values() for name in names.split())

# list*() functions return keys and connection strings: never put their results in outputs.
SECRET_RETURNING_PREFIX = "list"


def is_known_function(name: str, user_functions: frozenset[str] = frozenset()) -> bool:
    """True for ARM's functions, list* resource functions and the template's own "namespace.member" functions."""
    lowered = name.lower()
    if "." in lowered:
        return lowered in user_functions
    return lowered in ARM_FUNCTIONS or lowered.startswith(SECRET_RETURNING_PREFIX)


def returns_secrets(name: str) -> bool:
    return name.lower().startswith(SECRET_RETURNING_PREFIX) and "." not in name
