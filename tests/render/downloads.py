"""Finds boot-time downloads in a shell script that nothing pins.

A download is pinned when the script checks what arrived before using it:
- `git clone ... <dir>`: the script reads `git -C <dir> rev-parse HEAD` and compares it with a 40-hex commit
  assigned in the same script;
- `curl`/`wget`/`hpclz-locker-get` to a file: the script runs `sha256sum` on that file and compares it with a
  64-hex digest assigned in the same script (or `sha256sum -c`); the one digest not written by render is
  `@HPCLZ_WHEEL_SHA256@`, which hpclz-cluster-sync replaces with the 64-hex value of the CycleCloud VM's
  hpclz-wheel tag before the script reaches a node (it refuses any other shape);
- `hpclz-locker-get ... current <file>`: the locker's pointer to the wheel a running scheduler follows is a name,
  not code: pinned when the script reads it into a variable and matches it against the hpclz-wheel tag's shape
  (`^([0-9a-f]{64})/(hpclz-...whl)$`) before using it; the wheel it names is then checked by that digest;
- `pip install`: with `--no-deps` (nothing resolved beyond what the line names), every argument a local file the
  script verified with `sha256sum` as above, and every `-r FILE` under `--require-hashes` (pip refuses a file whose
  SHA-256 the requirements do not list: pip.pypa.io/en/stable/topics/secure-installs/#hash-checking-mode) a file the
  script wrote (`>FILE`) from such a verified file; a requirement name (`hpclz==0.1.0`) is a package-index download
  and never pinned here.
Packages installed by name with apt-get/dnf come from the image's signed repositories and are not downloads in
this sense.
"""

from __future__ import annotations

import itertools
import re
import shlex

COMMIT = re.compile(r"^\s*(?:export\s+)?(\w+)=['\"]?([0-9a-f]{40})['\"]?\s*$", re.M)
DIGEST = re.compile(r"^\s*(?:export\s+)?(\w+)=['\"]?([0-9a-f]{64}|@HPCLZ_WHEEL_SHA256@)['\"]?\s*$", re.M)


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:
        return line.split()


def _assigned(pattern: re.Pattern[str], script: str) -> set[str]:
    return {name for name, _value in pattern.findall(script)}


def _compared(script: str, actual_of: str, pinned: set[str]) -> bool:
    """`actual=$(<actual_of>)` followed by a comparison of $actual with one of the pinned variables."""
    for match in re.finditer(r"(\w+)=\$\(([^)]*)\)", script):
        variable, command = match.groups()
        if actual_of not in command:
            continue
        for name in pinned:
            if re.search(rf'"\${variable}" !?==? "\${name}"|"\${name}" !?==? "\${variable}"', script):
                return True
    return False


def _file_verified(script: str, path: str) -> bool:
    digests = _assigned(DIGEST, script)
    quoted = re.escape(path)
    if re.search(rf"sha256sum\s+(?:--strict\s+)?-c\b.*{quoted}|{quoted}.*\|\s*sha256sum\s+(?:--strict\s+)?-c", script):
        return True
    return any(_compared(script, f"sha256sum {candidate}", digests) for candidate in (path, f'"{path}"'))


def _pointer_checked(script: str, path: str) -> bool:
    """`var=$(head ... <path> ...)` and then `[[ "$var" =~ ^([0-9a-f]{64})/(hpclz-` in the same script."""
    for match in re.finditer(r"(\w+)=\$\(head [^)]*" + re.escape(path) + r"[^)]*\)", script):
        if f'[[ "${match[1]}" =~ ^([0-9a-f]{{64}})/(hpclz-' in script:
            return True
    return False


# pip install options that take a value, which is then not a package argument.
PIP_VALUED = {"--only-binary", "--no-binary", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f"}
SHELL_OPERATORS = {"||", "&&", ";", "|"}


def _written_from_verified(script: str, path: str) -> bool:
    """A command (continuation lines joined) that writes `path` with `>` and reads a file verified by its SHA-256."""
    for line in re.sub(r"\\\n", " ", script).splitlines():
        words = _words(line)
        writes = f">{path}" in words or any(a == ">" and b == path for a, b in itertools.pairwise(words))
        if writes and any(_file_verified(script, word) for word in words if not word.startswith(">")):
            return True
    return False


def _pip_pinned(script: str, after: list[str]) -> bool:
    words = list(itertools.takewhile(lambda word: word not in SHELL_OPERATORS, after))
    packages: list[str] = []
    requirements: list[str] = []
    values = iter(words)
    for word in values:
        if word in ("-r", "--requirement"):
            requirements.append(next(values, ""))
        elif word in PIP_VALUED or word == "--find-links":
            next(values, "")
        elif not word.startswith("-"):
            packages.append(word)
    if "--no-deps" not in words or not (packages or requirements):
        return False
    if requirements and "--require-hashes" not in words:
        return False
    return all(_file_verified(script, p) for p in packages) and all(
        _written_from_verified(script, r) for r in requirements
    )


def _clone_target(words: list[str]) -> str | None:
    args = [w for w in words[words.index("clone") + 1 :] if not w.startswith("-")]
    # `--branch X` takes a value: drop it from the positional arguments.
    for option in ("--branch", "-b", "--depth"):
        if option in words:
            value = words[words.index(option) + 1]
            if value in args:
                args.remove(value)
    return args[1] if len(args) > 1 else None


def _curl_target(words: list[str]) -> str | None:
    for option in ("-o", "--output", "-O"):
        if option in words:
            return words[words.index(option) + 1] if option != "-O" else words[-1].rsplit("/", 1)[-1]
    for word in words:
        if word.startswith("-") and not word.startswith("--") and "o" in word[1:] and word[-1] == "o":
            return words[words.index(word) + 1]
    return None


def unpinned_downloads(script: str) -> list[str]:
    """Each download line of `script` that nothing in it verifies, as the line itself. The files a script writes
    through here-documents are not its own lines: bash helpers among them are checked on their own."""
    script = re.sub(r"<<'(\w+)'\n.*?^\1$", "", script, flags=re.S | re.M)
    problems = []
    commits = _assigned(COMMIT, script)
    for line in script.splitlines():
        words = _words(line)
        if not words:
            continue
        text = " ".join(words)
        if "git" in words and "clone" in words:
            target = _clone_target(words)
            if target is None or not _compared(script, f"git -C {target} rev-parse HEAD", commits):
                problems.append(line.strip())
        elif words[0].endswith("hpclz-locker-get"):
            target = words[-1]
            if not (_file_verified(script, target) or (words[-2] == "current" and _pointer_checked(script, target))):
                problems.append(line.strip())
        elif words[0] in ("curl", "wget") or re.search(r"\$\((?:curl|wget)\b", line):
            target = _curl_target(words)
            if target is None or not _file_verified(script, target):
                problems.append(line.strip())
        elif re.search(r"\bpip3?\s+install\b", text):
            if not _pip_pinned(script, words[words.index("install") + 1 :]):
                problems.append(line.strip())
        elif re.search(r"\b(?:dnf|yum|rpm|apt-get|apt)\b.*\binstall\b.*https?://", text):
            problems.append(line.strip())
    return problems
