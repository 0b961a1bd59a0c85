"""The CycleCloud cluster template as it ships in the CycleCloud server's userData: the rendered template less its
whole-line comments, where removing them cannot change what runs.

Why: userData is at most 65,536 base64 characters ("The maximum size of user data is 64 KB": learn.microsoft.com/
azure/virtual-machines/user-data), and the template's why-comments, with their sources, were about 40 % of it after xz
(benchmarks/README.md, boot payloads). Each node's CloudInit script in it also rides in the node VM's customData
(65,535 bytes, learn.microsoft.com/azure/virtual-machines/custom-data), beside a part of CycleCloud's own
(hpclz.render.limits). The rendered artifact `cyclecloud/slurm-cluster.txt` keeps every comment for the people who
read it; the server imports this form, and the nodes run its scripts.

What is removed, and only that:
- a line of the template itself, outside any ''' string, whose first non-blank character is `#`: a comment in
  CycleCloud's template format, like the ones the stock templates/slurm.txt carries (Azure/cyclecloud-slurm@50e6739);
- inside a `CloudInit = '''...'''` script, a line whose first non-blank character is `#` (not a `#!` line) outside
  its here-documents;
- inside one of the script's here-documents, only where the language of the file it writes is known and the file is
  written as it stands (`<<'WORD'`: quoted, so not expanded, and not `<<-`, so no tabs stripped):
  - a Python program (its first line a python shebang): a comment token alone on its line (tokenize), not the
    shebang and not an encoding declaration on line 1 or 2 (PEP 263); kept only if `ast.parse` gives the same tree
    with and without them, checked here, so a wrong removal cannot ship (the tree, not line numbers: a traceback on
    a node numbers the shipped file's lines, as bash's LINENO already did for the scripts);
  - a bash or sh program (its first line a bash/sh shebang) with no `#SBATCH` line (sbatch reads those): its
    comment lines outside its own here-documents, which stay byte for byte, as the script's do;
  - a systemd unit written to /etc/systemd/system/NAME.service (.timer, .socket, .mount, .path): a line starting with
    `#` or `;` that does not follow a line ending in a backslash; kept only if the unit reads the same (`_directives`).
Every other here-document (data, config, environment and fstab files, anything unrecognised) and every other '''
string (a parameter's description) is kept byte for byte. Bash's parser is not asked here (render must not need
bash, nor depend on its version): tests/render/test_shipped_template.py proves each shipped script and each bash
program in it the same to bash's own parser (`declare -f` prints a function as bash parsed it, without comments).
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Callable

TRIPLE = "'''"
SCRIPT_OPENS = re.compile(r"^\s*CloudInit\s*=\s*'''")
# A here-document's operator and its word, quoted or not (bash(1), Here Documents: `<<[-]word`; "If any part of word is
# quoted ... the lines in the here-document are not expanded"); `<<<` is a here-string, which ends on its own line.
HEREDOC = re.compile(r"(?<!<)<<(?P<dash>-?)\s*(?P<quote>['\"]?)(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P=quote)(?!<)")
PYTHON = re.compile(r"#!\s*(?:/usr/bin/env\s+)?(?:/\S*/)?python[0-9.]*(?:\s+-\S+)*\s*$")
SHELL = re.compile(r"#!\s*(?:/usr/bin/env\s+)?(?:/\S*/)?(?:bash|sh)(?:\s+-\S+)*\s*$")
# peps.python.org/pep-0263: "the first or second line must match the following regular expression".
ENCODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-_.a-zA-Z0-9]+)")
# A unit file written with `>` (not appended to) straight into /etc/systemd/system.
UNIT = re.compile(
    r"(?<![>&])>\s*(?P<q>['\"]?)/etc/systemd/system/[\w@.:-]+\.(?:service|timer|socket|mount|path)(?P=q)(?:\s|$)"
)
COMMENT_MARKS = ("#", ";")
# sbatch(1), slurm.schedmd.com/sbatch.html: "The batch script may contain options preceded with "#SBATCH" before any executable commands".
SBATCH = re.compile(r"^\s*#SBATCH")

Body = Callable[[re.Match[str], list[str]], list[str]]


def _is_comment(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.startswith("#") and not stripped.startswith("#!")


def _end(lines: list[str], start: int, opened: re.Match[str]) -> int:
    """The index of the line that closes the here-document `opened` whose body starts at `start`: `<<-` strips
    leading tabs before it looks for the word, `<<` wants the word alone on its line (bash(1), Here Documents)."""
    word = opened["word"]
    for at in range(start, len(lines)):
        if (lines[at].lstrip("\t") if opened["dash"] else lines[at]) == word:
            return at
    return len(lines)


def _bash(lines: list[str], body: Body) -> list[str]:
    """A bash program's lines less its comment lines outside here-documents; each here-document's body as `body`
    gives it back."""
    kept: list[str] = []
    at = 0
    while at < len(lines):
        line = lines[at]
        at += 1
        if _is_comment(line):
            continue
        kept.append(line)
        opened = HEREDOC.search(line)
        if opened:
            end = _end(lines, at, opened)
            kept.extend(body(opened, lines[at:end]))
            kept.extend(lines[end : end + 1])
            at = end + 1
    return kept


def _as_written(_opened: re.Match[str], body: list[str]) -> list[str]:
    return body


def _python(body: list[str]) -> list[str]:
    """A Python program less its whole-line comments, if its syntax tree stays the same; else as it was."""
    return list(_python_lines(tuple(body)))


# A pure function of the program's text, and the dearest step of a render (tokenize and two syntax trees per program):
# the same programs ride in every partition's script and in every render of the same config in one process.
@functools.lru_cache(maxsize=256)
def _python_lines(body: tuple[str, ...]) -> tuple[str, ...]:
    source = "\n".join(body) + "\n"
    try:
        gone = {
            token.start[0] - 1
            for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type == tokenize.COMMENT and not token.line[: token.start[1]].strip()
        }
        gone -= {0, *(n for n in (0, 1) if n < len(body) and ENCODING.match(body[n]))}  # the shebang, PEP 263
        after = [line for n, line in enumerate(body) if n not in gone]
        same = ast.dump(ast.parse(source)) == ast.dump(ast.parse("\n".join(after) + "\n"))
    except (SyntaxError, ValueError, tokenize.TokenError):
        return body
    return tuple(after) if same else body


def _directives(lines: list[str]) -> list[str]:
    """A unit file as systemd reads it (systemd.syntax(7), man7.org/linux/man-pages/man7/systemd.syntax.7.html):
    "Empty lines and lines starting with "#" or ";" are ignored", and "Lines ending in a backslash are concatenated
    with the following line while reading and the backslash is replaced by a space character". A comment inside such a
    continuation is read differently by versions (newer pages add "When a comment line or lines follow a line ending
    with a backslash, the comment block is ignored"; older ones say nothing), so it is kept as a line here."""
    read: list[str] = []
    joined: str | None = None
    for line in lines:
        if joined is None and (not line.strip() or line.startswith(COMMENT_MARKS)):
            continue
        joined = line if joined is None else f"{joined} {line}"
        if joined.endswith("\\"):
            joined = joined[:-1]
            continue
        read.append(joined)
        joined = None
    return read if joined is None else [*read, joined]


def _unit(body: list[str]) -> list[str]:
    after = [
        line
        for n, line in enumerate(body)
        if not line.startswith(COMMENT_MARKS) or (n > 0 and body[n - 1].endswith("\\"))
    ]
    return after if _directives(after) == _directives(body) else body


def _here_document(opened: re.Match[str], body: list[str]) -> list[str]:
    """A here-document of a node script: less its comments where the language of what it writes is known."""
    if opened["dash"] or not opened["quote"] or not body:
        return body
    if PYTHON.match(body[0]):
        return _python(body)
    if SHELL.match(body[0]) and not any(SBATCH.match(line) for line in body):
        return _bash(body, _as_written)
    if UNIT.search(opened.string):
        return _unit(body)
    return body


def shipped_template(template: str) -> str:
    """`template` without the comment lines named in the module docstring; everything else byte for byte."""
    lines = template.split("\n")
    kept: list[str] = []
    at = 0
    while at < len(lines):
        line = lines[at]
        at += 1
        if _is_comment(line):
            continue
        kept.append(line)
        if line.count(TRIPLE) % 2 == 0:
            continue
        end = next((n for n in range(at, len(lines)) if TRIPLE in lines[n]), len(lines))
        string = lines[at:end]
        kept.extend(_bash(string, _here_document) if SCRIPT_OPENS.match(line) else string)
        kept.extend(lines[end : end + 1])
        at = end + 1
    return "\n".join(kept)
