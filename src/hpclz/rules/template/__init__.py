"""Template lint rules (HPCLZ-TPL-NNN), in the spirit of arm-ttk. TEMPLATE_RULES lists every one.

The three gates of hpclz.gates run their own slice: SCHEMA_RULES (official ARM schemas), LINT_RULES
(expressions, resources, secrets, exposure) and CHECKOV_RULES (checkov and its allowlist).
"""

from __future__ import annotations

from typing import Any

from hpclz.rules.base import Rule
from hpclz.rules.template.azure_limits import (
    AmlfsHsmPrerequisites,
    ArchiveTierAvailable,
    BastionNativeClientTunneling,
    HostMaintenanceOnVm,
    PlatformPatchingOnSupportedImage,
    VmLoginNeedsEntraExtension,
)
from hpclz.rules.template.checkov import AllowlistNotStale, CheckovChecksPass
from hpclz.rules.template.custom_data import CustomDataWithoutSecrets
from hpclz.rules.template.database import MysqlOnStandardSupport
from hpclz.rules.template.delegation import ContainerDataIdentityGetsDelegationKey
from hpclz.rules.template.exposure import (
    BlobPublicAccessDisabled,
    HttpsOnlyUnlessPrivateNfs,
    NoAdminPortsFromInternet,
    PublicEndpointDeniedByDefault,
)
from hpclz.rules.template.expressions import DeclarationsUsed, ExpressionParses, FunctionsExist, ReferencesDeclared
from hpclz.rules.template.locker import LockerAccountHoldsNoData, LoginNodesCarryNoDataIdentity
from hpclz.rules.template.monitoring import VmMonitored
from hpclz.rules.template.nodes import (
    JobsKeptFromNodeIdentities,
    NodeIdentitiesReadSingleSecrets,
    NodesCarryRequiredTags,
    SecretParametersReachTheSchedulerAlone,
)
from hpclz.rules.template.public_ip import NoPublicIpOnNics
from hpclz.rules.template.resources import (
    ApiVersionPinned,
    DependsOnExists,
    LocationFromDeployment,
    ParametersSupplied,
    ParameterValuesValid,
    ResourcesTagged,
)
from hpclz.rules.template.sched import SchedShareReachedOnlyByTheCluster
from hpclz.rules.template.schema import ResourceMatchesSchema, ResourceTypeKnown
from hpclz.rules.template.secrets import (
    LinuxPasswordLoginDisabled,
    OutputsWithoutSecrets,
    PasswordsSecure,
    SecureParameterNoDefault,
)

SCHEMA_RULES: tuple[type[Rule[Any]], ...] = (ResourceMatchesSchema, ResourceTypeKnown)
LINT_RULES: tuple[type[Rule[Any]], ...] = (
    ExpressionParses,
    FunctionsExist,
    ReferencesDeclared,
    DeclarationsUsed,
    DependsOnExists,
    LocationFromDeployment,
    ApiVersionPinned,
    ResourcesTagged,
    ParametersSupplied,
    ParameterValuesValid,
    SecureParameterNoDefault,
    OutputsWithoutSecrets,
    PasswordsSecure,
    LinuxPasswordLoginDisabled,
    CustomDataWithoutSecrets,
    NoAdminPortsFromInternet,
    BlobPublicAccessDisabled,
    HttpsOnlyUnlessPrivateNfs,
    PublicEndpointDeniedByDefault,
    AmlfsHsmPrerequisites,
    BastionNativeClientTunneling,
    ArchiveTierAvailable,
    VmLoginNeedsEntraExtension,
    HostMaintenanceOnVm,
    PlatformPatchingOnSupportedImage,
    LockerAccountHoldsNoData,
    LoginNodesCarryNoDataIdentity,
    NodesCarryRequiredTags,
    NodeIdentitiesReadSingleSecrets,
    SecretParametersReachTheSchedulerAlone,
    JobsKeptFromNodeIdentities,
    ContainerDataIdentityGetsDelegationKey,
    MysqlOnStandardSupport,
    SchedShareReachedOnlyByTheCluster,
    NoPublicIpOnNics,
    VmMonitored,
)
CHECKOV_RULES: tuple[type[Rule[Any]], ...] = (CheckovChecksPass,)
ALLOWLIST_RULES: tuple[type[Rule[Any]], ...] = (AllowlistNotStale,)

TEMPLATE_RULES: tuple[type[Rule[Any]], ...] = SCHEMA_RULES + LINT_RULES + CHECKOV_RULES + ALLOWLIST_RULES
