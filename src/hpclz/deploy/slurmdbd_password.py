r"""What Slurm accounting's database password may hold, checked when deploy reads it, before anything is asked of Azure.

How the password travels: hpclz-cluster-sync reads it from Key Vault into the JSON parameters file it hands to
`cyclecloud import_cluster -p` (templates/cloud-init/cluster_sync.py), the cluster template sets
`slurm.accounting.password = $AccountingPassword` on the scheduler, cyclecloud-slurm reads it back from
`jetpack config --json` (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py l.1074, l.98) and writes it
raw, `StoragePass={password}`, into slurmdbd.conf (install.py l.428, through `str.format`, installlib.py l.223).
JSON carries any character, so the line in slurmdbd.conf is where a password breaks. Slurm's parser
(SchedMD/slurm slurm-25-11-5-1, the release hpclz installs, src/common/parse_config.c):
- `_strip_comments` (l.403-422) ends the line at the first `#` not preceded by an odd number of backslashes;
- `_strip_escapes` (l.427-437) then drops every backslash (`\\` stands for one);
- `keyvalue_pattern` (l.93-99) takes an unquoted value up to the first whitespace, and a value written
  `"..."` as what is between the quotes;
- `_strip_continuation` (l.355-380) joins the next line to one that ends in a backslash, and a newline in the
  value would start a new line of the file.
So a password with `#`, `\` or whitespace (space, tab, line breaks), or one wrapped in double quotes, reaches MySQL
other than it is, and slurmdbd cannot sign in (tests/deploy/test_slurmdbd_password.py shows a real Slurm's parser doing
so).

When hpclz creates the server (compute.accounting mode new) the password is also its administrator password, which
Azure Database for MySQL flexible server takes only with "between 8 and 128 characters" from "three of the
following categories: English uppercase letters, English lowercase letters, numbers (0 through 9), and
nonalphanumeric characters" (learn.microsoft.com/azure/mysql/flexible-server/quickstart-create-server-portal,
Basics, Password; MicrosoftDocs/azure-databases-docs@02b7946). A password on a server someone else runs (mode
existing) follows that server's rules, which hpclz does not know.

The problems name the characters, never the password."""

from __future__ import annotations

# parse_config.c: `#` starts a comment, `\` is an escape; both are taken out of the value.
_SLURM_SPECIAL = {"#": "'#'", "\\": "'\\'"}
_C_SPACE = " \t\n\v\f\r"  # isspace(3) in the "C" locale
ADMIN_LENGTH = (8, 128)
ADMIN_CATEGORIES = 3


def _character(char: str) -> str | None:
    """How a character that breaks the slurmdbd.conf line is named, or None for one that does not."""
    if char in _SLURM_SPECIAL:
        return _SLURM_SPECIAL[char]
    if char == " ":
        return "a space"
    # [[:space:]] in the C locale ends an unquoted value, and a newline or carriage return splits the line.
    if char in _C_SPACE:
        return f"U+{ord(char):04X}"
    return None


def _categories(value: str) -> int:
    ascii_letters = [c for c in value if c.isascii() and c.isalpha()]
    return sum(
        (
            any(c.isupper() for c in ascii_letters),
            any(c.islower() for c in ascii_letters),
            any(c.isascii() and c.isdigit() for c in value),
            any(not (c.isascii() and c.isalnum()) for c in value),
        )
    )


def password_problems(value: str, *, server_admin: bool) -> list[str]:
    """Why `value` cannot be slurmdbd's StoragePass (and, with `server_admin`, the flexible server's administrator
    password); empty when it can. Each problem names characters or counts, never the value."""
    names = list(dict.fromkeys(n for n in map(_character, value) if n is not None))
    problems = []
    if names:
        problems.append(f"it holds {', '.join(names)}, which slurmdbd.conf's parser cuts or drops")
    if len(value) >= 2 and value[0] == value[-1] == '"' and '"' not in value[1:-1]:
        problems.append("it is wrapped in double quotes, which slurmdbd.conf's parser takes off")
    if server_admin:
        low, high = ADMIN_LENGTH
        if not low <= len(value) <= high:
            problems.append(f"it is {len(value)} characters long, and Azure Database for MySQL takes {low} to {high}")
        found = _categories(value)
        if found < ADMIN_CATEGORIES:
            problems.append(
                f"it mixes {found} of the 4 kinds of character (upper case, lower case, digits, others) where "
                f"Azure Database for MySQL needs {ADMIN_CATEGORIES}"
            )
    return problems
