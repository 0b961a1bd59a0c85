"""Metadata: who and where the landing zone is."""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Literal

from pydantic import Field

from hpclz.config.base import AzureRegion, Guid, StrictModel, Tags, policy


class Environment(StrEnum):
    DEV = "dev"
    TEST = "test"
    PROD = "prod"


class Metadata(StrictModel):
    """Identity of the landing zone; `name` prefixes every resource name."""

    name: str = Field(
        pattern=r"^[a-z][a-z0-9]{1,11}$",
        json_schema_extra=policy("not_allowed"),
        description="2-12 lowercase letters/digits, starting with a letter. Prefix of every resource name.",
    )
    environment: Environment = Field(json_schema_extra=policy("not_allowed"))
    location: AzureRegion = Field(json_schema_extra=policy("not_allowed"))
    cloud: Literal["public", "usgov", "china"] = Field(
        default="public",
        description="Azure cloud: public, usgov (Azure Government) or china (operated by 21Vianet). "
        "HPCLZ_AZURE_CLOUD overrides it for one run.",
        json_schema_extra=policy("not_allowed"),
    )
    subscription_id: Guid | None = Field(
        default=None,
        description="Azure subscription GUID; when absent, taken from AZURE_SUBSCRIPTION_ID at run time.",
    )
    tags: Tags = Field(default_factory=dict, description="Tags applied to every resource hpclz creates.")

    def resolved_subscription_id(self) -> str | None:
        return self.subscription_id or os.environ.get("AZURE_SUBSCRIPTION_ID")
