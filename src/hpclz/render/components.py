"""Per-component template context: derived values a template needs beyond the shared Zone."""

from __future__ import annotations

from typing import Any

from hpclz.render.nsg import security_rules
from hpclz.render.roles import assignments
from hpclz.render.zone import SubnetView, Zone


def network(zone: Zone) -> dict[str, Any]:
    def nsg_rules(view: SubnetView) -> list[dict[str, Any]]:
        return security_rules(view, zone.config.network.nsg_rules)

    return {"nsg_rules": nsg_rules, "assignments": assignments(zone, "network")}
