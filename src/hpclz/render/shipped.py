"""The CycleCloud cluster template as it ships in the CycleCloud server's userData: the rendered template less its
whole-line comments, where removing them cannot change what runs.

Why: userData is at most 65,536 base64 characters ("The maximum size of user data is 64 KB": learn.microsoft.com/
azure/virtual-machines/user-data), and the template's why-comments, with their sources, were about 40 % of it after xz
(benchmarks/README.md, boot payloads). The rendered artifact `cyclecloud/slurm-cluster.txt` keeps every comment for
the people who read it; the server imports this form, and the nodes run its scripts.

What is removed, and only that:
- a line of the template itself, outside any ''' string, whose first non-blank character is `#`: a comment in
  CycleCloud's template format, like the ones the stock templates/slurm.txt carries (Azure/cyclecloud-slurm@50e6739);
- inside a `CloudInit = '''...'''` script, a line whose first non-blank character is `#` (not the `#!` line) that is
  not inside a here-document. Here-documents are kept byte for byte: they are the files and programs the script
  writes, whose `#` lines may be data (a Python program's, an `#SBATCH` line, a config file).
Every other ''' string (a parameter's description) is kept as it is. tests/render/test_shipped_template.py proves
each shipped script the same program as the rendered one to bash's own parser (`declare -f` prints a function as
bash parsed it, without its comments).
"""

from __future__ import annotations

import re

TRIPLE = "'''"
SCRIPT_OPENS = re.compile(r"^\s*CloudInit\s*=\s*'''")
# A here-document's operator and its word, quoted or not (bash(1), Here Documents: `<<[-]word`); `<<<` is a
# here-string, which ends on its own line.
HEREDOC = re.compile(r"(?<!<)<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1(?!<)")


def _is_comment(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.startswith("#") and not stripped.startswith("#!")


def shipped_template(template: str) -> str:
    """`template` without the comment lines named in the module docstring; everything else byte for byte."""
    kept: list[str] = []
    in_string = in_script = False
    heredoc_end: str | None = None
    for line in template.split("\n"):
        if not in_string:
            if _is_comment(line):
                continue
            kept.append(line)
            if line.count(TRIPLE) % 2 == 1:
                in_string, in_script = True, bool(SCRIPT_OPENS.match(line))
            continue
        if TRIPLE in line:  # the string ends on this line
            kept.append(line)
            in_string = in_script = False
            heredoc_end = None
            continue
        if not in_script:
            kept.append(line)
            continue
        if heredoc_end is not None:
            kept.append(line)
            # `<<-` strips leading tabs before it looks for the word; `<<` wants the word alone on its line.
            if line.lstrip("\t") == heredoc_end:
                heredoc_end = None
            continue
        if _is_comment(line):
            continue
        kept.append(line)
        opened = HEREDOC.search(line)
        if opened:
            heredoc_end = opened.group(2)
    return "\n".join(kept)
