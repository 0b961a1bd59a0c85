"""The cluster template in the CycleCloud server's userData (hpclz.render.shipped): the rendered one less comments,
with every node script the same program to bash's own parser outside its here-documents, and every here-document the
same program or unit to its own reader (Python's parser, bash's, systemd's rules) or byte for byte."""

from __future__ import annotations

import ast
import difflib
import json
import re
import subprocess

import pytest

from hpclz.render.shipped import shipped_template
from tests.render.test_cloudinit import _artifacts

PRESETS = ("ai-training", "energy", "finance", "manufacturing")
# Written here, apart from hpclz.render.shipped's own, so a wrong split there shows as a difference here.
OPENS = re.compile(r"(?<!<)<<(-?)\s*(['\"]?)(\w+)\2(?!<)")
PYTHON = re.compile(r"#!\S*(?:env\s+)?\S*python")
SHELL = re.compile(r"#!\S*(?:env\s+)?\S*\b(?:ba)?sh\b")
UNIT = re.compile(r"> /etc/systemd/system/[^/\s]+\.(?:service|timer|socket|mount|path)\b")


def _scripts(template: str) -> list[str]:
    return re.findall(r"CloudInit = '''(.*?)'''", template, flags=re.S)


def _as_bash_parsed_it(script: str) -> str:
    """The script as bash parsed it: the body of a function, printed back by `declare -f` (bash(1), declare -f:
    "display ... the function definitions"), which prints no comments and every here-document as it was read."""
    done = subprocess.run(
        ["bash", "-c", 'eval "f() {"$\'\\n\'"$1"$\'\\n\'"}" && declare -f f', "bash", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout, done.stderr
    return done.stdout


def _here_documents(script: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The script's lines with each here-document's body left out, and each body with the line that opened it."""
    lines, outside, bodies = script.split("\n"), [], []
    at = 0
    while at < len(lines):
        line = lines[at]
        outside.append(line)
        at += 1
        opened = None if line.lstrip().startswith("#") else OPENS.search(line)
        if opened:
            end = at
            while end < len(lines) and (lines[end].lstrip("\t") if opened[1] else lines[end]) != opened[3]:
                end += 1
            bodies.append((line, lines[at:end]))
            at = end
    return outside, bodies


def _with_bodies(outside: list[str], bodies: list[tuple[str, list[str]]]) -> str:
    """The lines of `_here_documents` put back together with `bodies`."""
    rest, lines = iter(bodies), []
    for line in outside:
        lines.append(line)
        if not line.lstrip().startswith("#") and OPENS.search(line):
            lines.extend(next(rest)[1])
    return "\n".join(lines)


def _same_unit(before: list[str], after: list[str]) -> None:
    """Only lines systemd ignores went: each starts with "#" or ";" (systemd.syntax(7): "Empty lines and lines starting
    with "#" or ";" are ignored") and none follows a line ending in a backslash, which continues into the next line
    ("Lines ending in a backslash are concatenated with the following line while reading")."""
    for op, start, end, _, _ in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        assert op == "delete", (op, before[start:end])
        for n in range(start, end):
            assert before[n].startswith(("#", ";")) and not before[n - 1].endswith("\\"), before[n - 1 : n + 1]


def _kind(opening: str, before: list[str]) -> str:
    """What a here-document writes, as this test tells it apart (first line, target path), and proves unchanged."""
    first = before[0] if before else ""
    if PYTHON.match(first):
        return "python"
    if SHELL.match(first):
        return "bash"
    return "unit" if UNIT.search(opening) else "other"


def _same_program(opening: str, before: list[str], after: list[str]) -> str:
    kind = _kind(opening, before)
    if kind == "python":  # every one, changed or not
        assert ast.dump(ast.parse("\n".join(after))) == ast.dump(ast.parse("\n".join(before))), opening
    if after == before:
        return "same"
    # Changed only where bash writes the body as it stands: a quoted word, not `<<-` (bash(1), Here Documents).
    assert re.search(r"<<(['\"])\w+\1", opening), opening
    if kind == "python":
        pass
    elif kind == "bash":
        assert not any(line.lstrip().startswith("#SBATCH") for line in before), opening
        assert _as_bash_parsed_it("\n".join(after)) == _as_bash_parsed_it("\n".join(before)), opening
    elif kind == "unit":
        _same_unit(before, after)
    else:
        raise AssertionError(f"a here-document of no known kind changed: {opening}")
    return kind


@pytest.mark.parametrize("stem", PRESETS)
def test_every_shipped_script_is_the_rendered_program(stem: str) -> None:
    artifacts = _artifacts(stem)
    rendered = artifacts["cyclecloud/slurm-cluster.txt"]
    shipped = json.loads(artifacts["cloud-init/cyclecloud-userdata.json"])["template"]
    assert shipped == shipped_template(rendered)
    before, after = _scripts(rendered), _scripts(shipped)
    assert len(before) == len(after) >= 3
    stripped: set[str] = set()
    for old, new in zip(before, after, strict=True):
        assert new.startswith("#!/bin/bash\n") and len(new) < len(old)
        old_outside, old_bodies = _here_documents(old)
        new_outside, new_bodies = _here_documents(new)
        assert _with_bodies(old_outside, old_bodies) == old and _with_bodies(new_outside, new_bodies) == new
        assert [opening for opening, _ in new_bodies] == [opening for opening, _ in old_bodies]
        # Outside its here-documents, the same program: the shipped script with the rendered bodies put back.
        assert _as_bash_parsed_it(_with_bodies(new_outside, old_bodies)) == _as_bash_parsed_it(old)
        for (opening, old_body), (_, new_body) in zip(old_bodies, new_bodies, strict=True):
            stripped.add(_same_program(opening, old_body, new_body))
    # Python and bash programs lost comments in every preset; units only where a unit has one (the NVMe scratch and
    # GPU clock units of the GPU presets).
    assert {"python", "bash", *(["unit"] if stem in ("ai-training", "energy") else [])} <= stripped, stripped
    # Only whole comment lines went: the shipped template is the rendered one with some lines left out, in order.
    kept = iter(rendered.split("\n"))
    for line in shipped.split("\n"):
        assert any(line == candidate for candidate in kept), line
    gone = len(rendered.split("\n")) - len(shipped.split("\n"))
    assert gone > 0


def _cloud_init(*script: str) -> str:
    return "\n".join(["[cluster c]", "    CloudInit = '''#!/bin/bash", *script, "'''"])


def _shipped_script(*script: str) -> list[str]:
    return _scripts(shipped_template(_cloud_init(*script)))[0].split("\n")[1:-1]


def test_here_documents_and_other_strings_keep_their_comment_lines() -> None:
    template = "\n".join(
        [
            "# a template comment",
            "[cluster c]",
            "    Description = '''",
            "# kept: a description's text",
            "'''",
            "    CloudInit = '''#!/bin/bash",
            "# a script comment",
            "  # an indented one",
            "cat > /etc/x.py <<'EOF'",
            "# kept: the program's own comment, but no shebang says it is one",
            "EOF",
            "cat <<-WORD >/etc/y",
            "\t# kept: inside <<- until the tab-indented word",
            "\tWORD",
            "echo done # a trailing comment stays with its command",
            "'''",
        ]
    )
    assert shipped_template(template).split("\n") == [
        "[cluster c]",
        "    Description = '''",
        "# kept: a description's text",
        "'''",
        "    CloudInit = '''#!/bin/bash",
        "cat > /etc/x.py <<'EOF'",
        "# kept: the program's own comment, but no shebang says it is one",
        "EOF",
        "cat <<-WORD >/etc/y",
        "\t# kept: inside <<- until the tab-indented word",
        "\tWORD",
        "echo done # a trailing comment stays with its command",
        "'''",
    ]


def test_a_python_program_loses_its_comment_lines_but_not_a_string_s() -> None:
    program = [
        "#!/usr/bin/env python3",
        "# -*- coding: utf-8 -*-",
        "# a comment",
        'USAGE = """',  # not ''', which would end the template's string
        "# kept: a line of a string, not a comment",
        '"""',
        "def main() -> None:",
        "    # an indented comment",
        "    print(USAGE)  # a trailing comment stays",
        "    (1,",
        "        # a comment inside brackets",
        "     2)",
    ]
    shipped = _shipped_script("cat > /opt/hpclz/bin/p <<'HPCLZ_EOF'", *program, "HPCLZ_EOF")
    kept = [*program[:2], *program[3:7], program[8], program[9], program[11]]
    assert shipped == ["cat > /opt/hpclz/bin/p <<'HPCLZ_EOF'", *kept, "HPCLZ_EOF"]


def test_python_the_parser_cannot_read_and_python_written_unquoted_stay_as_they_are() -> None:
    python2 = ["#!/usr/bin/python", "# a comment", 'print "python 2"']
    expanded = ["#!/usr/bin/env python3", "# a comment $(hostname) would expand", "print(1)"]
    script = ["cat > /a <<'EOF'", *python2, "EOF", "cat > /b <<EOF", *expanded, "EOF"]
    assert _shipped_script(*script) == script


def test_a_bash_program_loses_its_comments_but_not_its_here_documents_nor_sbatch_lines() -> None:
    program = [
        "#!/bin/bash",
        "# a comment",
        "set -euo pipefail",
        "cat > /etc/job.py <<'INNER'",
        "#!/usr/bin/env python3",
        "# kept: a here-document of the program's own",
        "INNER",
        "  # an indented comment",
        "echo done",
    ]
    shipped = _shipped_script("cat > /opt/hpclz/bin/b <<'HPCLZ_EOF'", *program, "HPCLZ_EOF")
    assert shipped == ["cat > /opt/hpclz/bin/b <<'HPCLZ_EOF'", program[0], *program[2:7], program[8], "HPCLZ_EOF"]
    job = ["#!/bin/bash", "#SBATCH --nodes=2", "# a comment beside what sbatch reads", "srun hostname"]
    script = ["cat > /opt/hpclz/jobs/nccl.sbatch <<'EOF'", *job, "EOF"]
    assert _shipped_script(*script) == script


def test_a_unit_loses_its_comments_but_not_one_inside_a_continued_line() -> None:
    unit = [
        "[Unit]",
        "# a comment",
        "; another",
        "  # indented: kept, the rule here is a line that starts with one",
        "[Service]",
        "ExecStart=/bin/true \\",
        "# kept: after a backslash, systemd versions read it differently",
        "  --flag",
    ]
    kept = [unit[0], *unit[3:]]
    assert _shipped_script("cat > /etc/systemd/system/x.service <<'EOF'", *unit, "EOF")[1:-1] == kept
    for elsewhere in (
        "cat > /etc/systemd/system/x.service.d/override.conf <<'EOF'",  # a drop-in: not in the list
        "cat >> /etc/systemd/system/x.service <<'EOF'",  # appended to: what comes before is not known
        "cat > /etc/hpclz/x.conf <<'EOF'",  # a data file
    ):
        assert _shipped_script(elsewhere, *unit, "EOF") == [elsewhere, *unit, "EOF"]
