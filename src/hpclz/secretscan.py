"""What a secret looks like: shared by validate (refuses one in a config) and the state guard (refuses one in
state), so both nets catch the same things. Depends on nothing in hpclz, so every layer may use it."""

from __future__ import annotations

import re

# A secret written as `${env:NAME}`: deploy reads NAME from the environment. NAME follows POSIX
# (pubs.opengroup.org/onlinepubs/9699919799/basedefs/V1_chap08.html: letters, digits, underscore, not
# starting with a digit); `env` is lowercase, as identity.key_vault.secrets documents it.
ENV_REFERENCE = re.compile(r"^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$")
REFERENCE_START = "${"

# Credential formats with a documented, recognisable shape.
KNOWN_PATTERNS: dict[str, re.Pattern[str]] = {
    # learn.microsoft.com/azure/storage/common/storage-configure-connection-string (AccountKey=<base64>)
    "storage account key in a connection string": re.compile(r"AccountKey=[A-Za-z0-9+/=]{20,}", re.I),
    # learn.microsoft.com/rest/api/storageservices/create-service-sas (the `sig` query parameter)
    "shared access signature": re.compile(r"[?&;]sig=[A-Za-z0-9%+/=]{20,}|SharedAccessSignature=", re.I),
    "private key": re.compile(r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED )?PRIVATE KEY-----"),
    "Entra ID client secret": re.compile(r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"),
    # github.blog/2021-04-05-behind-githubs-new-authentication-token-formats
    "GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
}


# Literals of which every match of the pattern contains one, read off the pattern itself: a text holding none of them
# cannot match, so the pattern is not run. The state guard scans every string of the state, and the whole state, at
# every write (thousands of strings per write), and most strings hold none of these. "=" is no letter, so the
# case-blind patterns need it just as it is. A pattern with no entry is always run ("" is in every text).
_NEEDS: dict[str, tuple[str, ...]] = {
    "storage account key in a connection string": ("=",),
    "shared access signature": ("=",),
    "private key": ("PRIVATE KEY-----",),
    "Entra ID client secret": ("Q~",),
    "GitHub token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
}


# One scan for any of those literals: most texts hold none, and are done with one call.
_ANY_NEEDED = re.compile("|".join(re.escape(needed) for needs in _NEEDS.values() for needed in needs))
_ALL_NEED_A_LITERAL = set(KNOWN_PATTERNS) <= set(_NEEDS)


def looks_like_secret(text: str) -> str | None:
    """The kind of credential `text` holds, or None."""
    if _ALL_NEED_A_LITERAL and _ANY_NEEDED.search(text) is None:
        return None
    for label, pattern in KNOWN_PATTERNS.items():
        if any(needed in text for needed in _NEEDS.get(label, ("",))) and pattern.search(text):
            return label
    return None
