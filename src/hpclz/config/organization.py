"""Resource organization: resource groups, naming, tags, policy."""

from __future__ import annotations

from pydantic import Field

from hpclz.config.base import AzureRegion, StrictModel, policy


class ResourceGroups(StrictModel):
    """Resource group names per design area. Empty means the naming convention decides."""

    management: str | None = Field(default=None, json_schema_extra=policy("not_allowed"))
    network: str | None = Field(default=None, json_schema_extra=policy("not_allowed"))
    compute: str | None = Field(default=None, json_schema_extra=policy("not_allowed"))
    storage: str | None = Field(default=None, json_schema_extra=policy("not_allowed"))
    monitoring: str | None = Field(default=None, json_schema_extra=policy("not_allowed"))


class Naming(StrictModel):
    """Cloud Adoption Framework naming: <abbreviation>-<name>-<environment>-<region code>[-<suffix>]."""

    include_region: bool = Field(default=True, json_schema_extra=policy("not_allowed"))
    include_environment: bool = Field(default=True, json_schema_extra=policy("not_allowed"))
    separator: str = Field(default="-", pattern=r"^[-_]?$", json_schema_extra=policy("not_allowed"))
    unique_suffix: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9]{0,6}$",
        description="Appended to globally unique names (storage accounts, Key Vault) to avoid collisions. "
        "Unset: 4 hex characters of SHA-256 over metadata.subscription_id (when set), name, environment and "
        "location, so two landing zones never collide yet a re-render names the same resources. '' turns it off.",
        json_schema_extra=policy("not_allowed"),
    )


class PolicyAssignments(StrictModel):
    """Azure Policy guardrails assigned at the landing-zone resource groups."""

    allowed_locations: list[AzureRegion] = Field(default_factory=list)
    require_tags: bool = Field(default=False, description="Deny resources without the required tags.")
    regulated_baseline: bool = Field(
        default=False,
        description="Deny storage accounts with public network access or anonymous blob access (built-in policies).",
    )


class Organization(StrictModel):
    resource_groups: ResourceGroups = Field(default_factory=ResourceGroups)
    naming: Naming = Field(default_factory=Naming)
    required_tags: list[str] = Field(
        default_factory=lambda: ["owner", "costCenter"],
        description="Tag keys every resource must carry (metadata.tags must supply them).",
    )
    policies: PolicyAssignments = Field(default_factory=PolicyAssignments)
