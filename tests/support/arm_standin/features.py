"""Preview features (Microsoft.Features), the way ARM answers for them: every feature exists, registered or not.

GET /subscriptions/{sub}/providers/Microsoft.Features/providers/{namespace}/features/{name} returns
{"properties": {"state": "Registered" | "NotRegistered" | ...}} (api-version 2021-07-01, the shape of
`az feature show`). The stand-in's subscription has every feature registered unless a test lists it in
World.unregistered_features, as with providers.
"""

from __future__ import annotations

from typing import Any

FEATURE = r"/providers/microsoft\.features/providers/(?P<ns>[^/]+)/features/(?P<feature>[^/]+)"


def feature_body(unregistered: set[str], sub: str, ns: str, feature: str) -> dict[str, Any]:
    state = "NotRegistered" if f"{ns}/{feature}".lower() in unregistered else "Registered"
    return {
        "id": f"/subscriptions/{sub}/providers/Microsoft.Features/providers/{ns}/features/{feature}",
        "name": f"{ns}/{feature}",
        "type": "Microsoft.Features/providers/features",
        "properties": {"state": state},
    }
