"""Marketplace terms (Microsoft.MarketplaceOrdering agreements), answered as ARM does.

GET /subscriptions/{sub}/providers/Microsoft.MarketplaceOrdering/offerTypes/virtualmachine/publishers/{publisher}/
offers/{offer}/plans/{plan}/agreements/current returns AgreementTerms, the shape of the REST spec's example
(azure-rest-api-specs@e5e3b4c:specification/marketplaceordering/resource-manager/Microsoft.MarketplaceOrdering/stable/
2021-01-01/examples/GetMarketplaceTerms.json): id, name (the plan), type "Microsoft.MarketplaceOrdering/offertypes",
properties {publisher, product, plan, licenseTextLink, privacyPolicyLink, marketplaceTermsLink, retrieveDatetime,
signature, accepted}. The stand-in's subscription has accepted every plan's terms unless a test lists the plan
in World.unaccepted_terms as "publisher:offer:plan" in lower case.
"""

from __future__ import annotations

from typing import Any

TERMS = (
    r"/providers/microsoft\.marketplaceordering/offertypes/virtualmachine/publishers/(?P<publisher>[^/]+)"
    r"/offers/(?P<offer>[^/]+)/plans/(?P<plan>[^/]+)/agreements/current"
)


def terms_body(unaccepted: set[str], sub: str, publisher: str, offer: str, plan: str) -> dict[str, Any]:
    accepted = f"{publisher}:{offer}:{plan}".lower() not in unaccepted
    return {
        "id": (
            f"/subscriptions/{sub}/providers/Microsoft.MarketplaceOrdering/offerTypes/VirtualMachine/publishers/"
            f"{publisher}/offers/{offer}/plans/{plan}/agreements/current"
        ),
        "name": plan,
        "type": "Microsoft.MarketplaceOrdering/offertypes",
        "properties": {
            "publisher": publisher,
            "product": offer,
            "plan": plan,
            "licenseTextLink": f"https://mpcprodsa.blob.core.windows.net/legalterms/3E5ED_legalterms_{publisher}.txt",
            "privacyPolicyLink": "https://privacy.microsoft.com/privacystatement",
            "marketplaceTermsLink": "https://mpcprodsa.blob.core.windows.net/marketplaceterms/3EDEF_marketplaceterms.txt",
            # "Date and time in UTC of when the terms were accepted. This is empty if Accepted is false."
            "retrieveDatetime": "2026-11-01T00:00:00.0000000Z" if accepted else "",
            "signature": "STANDINSIGNATURE",
            "accepted": accepted,
        },
    }
