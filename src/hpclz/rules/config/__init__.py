"""Config rules, one module per design area. CONFIG_RULES lists every one, in order."""

from __future__ import annotations

from typing import Any

from hpclz.rules.base import Rule
from hpclz.rules.config.accounting import ACCOUNTING_RULES
from hpclz.rules.config.compute import COMPUTE_RULES
from hpclz.rules.config.identity import IDENTITY_RULES
from hpclz.rules.config.images import IMAGE_RULES
from hpclz.rules.config.integrity import INTEGRITY_RULES
from hpclz.rules.config.metrics import METRICS_RULES
from hpclz.rules.config.network import NETWORK_RULES
from hpclz.rules.config.operations import COST_RULES, MAINTENANCE_RULES, MONITORING_RULES
from hpclz.rules.config.organization import ORGANIZATION_RULES
from hpclz.rules.config.portal import PORTAL_RULES
from hpclz.rules.config.racks import RACK_RULES
from hpclz.rules.config.resilience import BACKUP_RULES, FLOW_LOG_RULES
from hpclz.rules.config.security import SECURITY_RULES
from hpclz.rules.config.shared_backup import SHARED_BACKUP_RULES
from hpclz.rules.config.storage import STORAGE_RULES
from hpclz.rules.config.zones import ZONE_RULES

CONFIG_RULES: tuple[type[Rule[Any]], ...] = (
    *ORGANIZATION_RULES,
    *IDENTITY_RULES,
    *NETWORK_RULES,
    *COMPUTE_RULES,
    *IMAGE_RULES,
    *RACK_RULES,
    *ACCOUNTING_RULES,
    *STORAGE_RULES,
    *ZONE_RULES,
    *INTEGRITY_RULES,
    *SECURITY_RULES,
    *PORTAL_RULES,
    *MONITORING_RULES,
    *FLOW_LOG_RULES,
    *METRICS_RULES,
    *MAINTENANCE_RULES,
    *BACKUP_RULES,
    *SHARED_BACKUP_RULES,
    *COST_RULES,
)
