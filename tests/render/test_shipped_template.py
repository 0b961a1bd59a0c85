"""The cluster template in the CycleCloud server's userData (hpclz.render.shipped): the rendered one less comments,
with every node script the same program to bash's own parser."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from hpclz.render.shipped import shipped_template
from tests.render.test_cloudinit import _artifacts

PRESETS = ("ai-training", "energy", "finance", "manufacturing")


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


@pytest.mark.parametrize("stem", PRESETS)
def test_every_shipped_script_is_the_rendered_program(stem: str) -> None:
    artifacts = _artifacts(stem)
    rendered = artifacts["cyclecloud/slurm-cluster.txt"]
    shipped = json.loads(artifacts["cloud-init/cyclecloud-userdata.json"])["template"]
    assert shipped == shipped_template(rendered)
    before, after = _scripts(rendered), _scripts(shipped)
    assert len(before) == len(after) >= 3
    for old, new in zip(before, after, strict=True):
        assert new.startswith("#!/bin/bash\n") and len(new) < len(old)
        assert _as_bash_parsed_it(new) == _as_bash_parsed_it(old)
    # Only whole comment lines went: the shipped template is the rendered one with some lines left out, in order.
    kept = iter(rendered.split("\n"))
    for line in shipped.split("\n"):
        assert any(line == candidate for candidate in kept), line
    gone = len(rendered.split("\n")) - len(shipped.split("\n"))
    assert gone > 0


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
            "# kept: the program's own comment",
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
        "# kept: the program's own comment",
        "EOF",
        "cat <<-WORD >/etc/y",
        "\t# kept: inside <<- until the tab-indented word",
        "\tWORD",
        "echo done # a trailing comment stays with its command",
        "'''",
    ]
