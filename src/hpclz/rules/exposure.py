"""What "open to the Internet" means in an NSG rule, shared by the config rules and the template lint.

`*`, `Internet`, `Any`, `0.0.0.0`, `0.0.0.0/0` and `::/0` all mean the whole Internet as a source prefix;
checkov matches only some of these spellings (docs/local-services.md).
"""

from __future__ import annotations

INTERNET_SOURCES = frozenset({"*", "internet", "any", "0.0.0.0", "0.0.0.0/0", "::/0"})
REMOTE_LOGIN_PORTS = {22: "SSH", 3389: "RDP"}


def is_internet(prefix: str) -> bool:
    return prefix.strip().lower() in INTERNET_SOURCES


def port_spans(text: str) -> list[tuple[int, int]]:
    """`22`, `20-25`, `*` and comma lists of them; anything else (an ARM expression) covers no port we can know."""
    spans = []
    for part in str(text).replace(" ", "").split(","):
        if part == "*":
            spans.append((0, 65535))
        elif "-" in part:
            low, _, high = part.partition("-")
            if low.isdecimal() and high.isdecimal():
                spans.append((int(low), int(high)))
        elif part.isdecimal():
            spans.append((int(part), int(part)))
    return spans


def covers(text: str, port: int) -> bool:
    return any(low <= port <= high for low, high in port_spans(text))
