"""Everything hpclz runs on a node is checked for the oldest interpreter and shell of the images it runs on.

Python: `/usr/bin/python3` on the AlmaLinux 8 CycleCloud image is 3.6 (AlmaLinux 8 ships platform-python 3.6;
cluster_sync.py runs there), and the partitions may use AlmaLinux 8 HPC images too, so every helper targets 3.6
with vermin. Shell: every rendered script is bash, checked by shellcheck (the Debian package).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PRESETS, require
from tests.render.conftest import preset_plan
from tests.render.downloads import unpinned_downloads
from tests.render.test_cloudinit import TEMPLATES, _artifacts, _cloud_config, _scripts

HELPERS = sorted(TEMPLATES.glob("*.py"))
VERMIN = Path(sys.executable).with_name("vermin")


def _vermin(*paths: Path) -> subprocess.CompletedProcess[str]:
    require(VERMIN.exists(), "vermin (the dev extra)")
    args = [str(VERMIN), "-t=3.6-", "--violations", "--no-tips", "-q", *map(str, paths)]
    return subprocess.run(args, capture_output=True, text=True, check=False)


def test_node_helpers_run_on_python_3_6() -> None:
    assert HELPERS, TEMPLATES
    checked = _vermin(*HELPERS)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_vermin_rejects_what_python_3_6_lacks(tmp_path: Path) -> None:
    """The check can fail: the exact call the cluster-sync script once made, which Python 3.6 lacks."""
    script = tmp_path / "old_sync.py"
    script.write_text('import subprocess\nsubprocess.run(["true"], capture_output=True, text=True)\n')
    checked = _vermin(script)
    assert checked.returncode != 0 and "capture_output" in checked.stdout


def _embedded(script: str) -> list[str]:
    """Bash helpers a script writes to disk through a quoted here-document, to be checked on their own."""
    bodies = re.findall(r"<<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", script, flags=re.S | re.M)
    return [body for body in bodies if body.startswith("#!/bin/bash")]


def _rendered_scripts(stem: str) -> list[str]:
    files = {f["path"]: f["content"] for f in _cloud_config(stem)["write_files"]}
    scripts = [
        *_scripts(_artifacts(stem)["cyclecloud/slurm-cluster.txt"]),
        files["/opt/hpclz/bin/bootstrap-cyclecloud"],
        files["/opt/hpclz/bin/hpclz-cc-await"],
        # The Open OnDemand VM's boot script (portal.*), where the preset has the portal.
        *[d.artifacts["cloud-init/portal.sh"] for d in preset_plan(stem).deployments if d.component == "portal"],
    ]
    return scripts + [helper for script in scripts for helper in _embedded(script)]


def test_no_node_builds_enroot_or_pyxis() -> None:
    """cyclecloud-slurm 4.0.9 installs and configures enroot and pyxis on every role from its own packages
    (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py:929-997): no node clones or compiles them."""
    for stem in ("ai-training", "energy"):
        for script in _rendered_scripts(stem):
            assert "git clone" not in script and "make -C" not in script, stem
            assert "github.com/NVIDIA" not in script, stem


def _shellcheck(path: Path) -> subprocess.CompletedProcess[str]:
    require(shutil.which("shellcheck") is not None, "shellcheck (Debian package)")
    return subprocess.run(
        ["shellcheck", "--shell=bash", "--severity=warning", "--format=gcc", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_rendered_shell_scripts_pass_shellcheck(preset: Path, tmp_path: Path) -> None:
    for index, text in enumerate(_rendered_scripts(preset.stem)):
        path = tmp_path / f"script{index}.sh"
        path.write_text(text, encoding="utf-8")
        checked = _shellcheck(path)
        assert checked.returncode == 0, f"{preset.stem} script {index}:\n{checked.stdout}"


def test_shellcheck_rejects_an_unquoted_expansion(tmp_path: Path) -> None:
    path = tmp_path / "bad.sh"
    path.write_text("#!/bin/bash\nfor f in $(ls /tmp); do rm $f; done\n")
    assert _shellcheck(path).returncode != 0


def _node_scripts_of(stem: str) -> list[str]:
    """What runs on the cluster's nodes (scheduler, login, partitions), helpers they write included."""
    scripts = _scripts(_artifacts(stem)["cyclecloud/slurm-cluster.txt"])
    return scripts + [helper for script in scripts for helper in _embedded(script)]


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_every_download_in_a_node_script_is_pinned(preset: Path) -> None:
    """hpclz comes from the locker as a file checked against its SHA-256; enroot and pyxis
    are no longer downloaded by a node script at all (cyclecloud-slurm installs them)."""
    problems = [line for script in _node_scripts_of(preset.stem) for line in unpinned_downloads(script)]
    assert problems == []


# The node script's container install before its downloads were pinned: release packages fetched unchecked.
UNPINNED_ENROOT = """#!/bin/bash
ENROOT_VERSION=3.5.0
arch=$(dpkg --print-architecture)
base="https://github.com/NVIDIA/enroot/releases/download/v${ENROOT_VERSION}"
curl -fsSLO "$base/enroot_${ENROOT_VERSION}-1_${arch}.deb"
apt-get install -y ./enroot_"${ENROOT_VERSION}"-1_"${arch}".deb
"""


# A wheel checked by its SHA-256 (as hpclz-install-wheel does), and its lock read out of it.
VERIFIED_WHEEL = (
    "#!/bin/bash\nSUM=" + "a" * 64 + '\nwheel=/tmp/w.whl\nactual=$(sha256sum "$wheel" | cut -d" " -f1)\n'
    '[ "$actual" = "$SUM" ] || exit 1\n'
)
LOCK_FROM_WHEEL = 'lock=/tmp/lock.txt\npython3 -c "import sys" \\\n  "$wheel" member >"$lock"\n'


@pytest.mark.parametrize(
    "script",
    [
        UNPINNED_ENROOT,
        "#!/bin/bash\n/opt/hpclz/venv/bin/pip install 'hpclz==0.1.0'\n",
        "#!/bin/bash\ngit clone --depth 1 --branch v0.20.0 https://github.com/NVIDIA/pyxis /opt/pyxis\n",
        "#!/bin/bash\ndnf install -y https://github.com/NVIDIA/enroot/releases/download/v3.5.0/enroot-3.5.0-1.el8.x86_64.rpm\n",
        # A digest that is assigned but never compared is no pin.
        "#!/bin/bash\nSUM=" + "a" * 64 + "\ncurl -fsSL -o /tmp/x.deb https://example.invalid/x.deb\n",
        # The locker's wheel pointer used without checking its shape.
        "#!/bin/bash\nhpclz-locker-get id acct hpclz current /tmp/current\nwanted=$(head -c 200 /tmp/current)\n",
        # A verified wheel whose dependencies pip would resolve from the index.
        VERIFIED_WHEEL + '"$new/bin/pip" install --no-cache-dir "$wheel" || exit 1\n',
        # Requirements with hashes, from a file nothing verified.
        VERIFIED_WHEEL + "pip install --require-hashes --no-deps -r /tmp/lock.txt\n",
        # Requirements from the verified wheel, but pip not told to refuse what the file does not pin.
        VERIFIED_WHEEL + LOCK_FROM_WHEEL + 'pip install --no-deps -r "$lock"\n',
        # ... or to stay within the file.
        VERIFIED_WHEEL + LOCK_FROM_WHEEL + 'pip install --require-hashes -r "$lock"\n',
    ],
    ids=[
        "enroot-deb",
        "pip-index",
        "clone-unchecked",
        "rpm-url",
        "digest-unused",
        "pointer-unchecked",
        "wheel-with-deps",
        "lock-unverified",
        "lock-without-hashes",
        "lock-with-deps",
    ],
)
def test_the_download_check_finds_an_unpinned_download(script: str) -> None:
    assert unpinned_downloads(script)


def test_the_download_check_accepts_a_verified_file() -> None:
    script = (
        "#!/bin/bash\nSUM=" + "a" * 64 + "\ncurl -fsSL -o /tmp/x.deb https://example.invalid/x.deb\n"
        'actual=$(sha256sum /tmp/x.deb | cut -d" " -f1)\n[ "$actual" = "$SUM" ] || exit 1\n'
    )
    assert unpinned_downloads(script) == []


def test_the_download_check_accepts_a_verified_wheel_and_the_hashed_lock_it_carries() -> None:
    script = (
        VERIFIED_WHEEL
        + LOCK_FROM_WHEEL
        + 'pip install --no-deps "$wheel" || exit 1\n'
        + 'pip install --require-hashes --no-deps --only-binary :all: -r "$lock" || exit 1\n'
    )
    assert unpinned_downloads(script) == []


def test_the_download_check_accepts_a_wheel_pointer_checked_for_shape() -> None:
    script = (
        "#!/bin/bash\nhpclz-locker-get id acct hpclz current /tmp/current\nwanted=$(head -c 200 /tmp/current)\n"
        '[[ "$wanted" =~ ^([0-9a-f]{64})/(hpclz-[A-Za-z0-9_.]+-py3-none-any\\.whl)$ ]] || exit 1\n'
    )
    assert unpinned_downloads(script) == []


def _single_arch_lines(script: str) -> list[str]:
    """Lines naming one CPU architecture outside a `case "$(uname -m)"` switch, and switches without an aarch64
    branch: a node script runs on x64 and on Grace (arm64) partitions alike (HPCLZ-CMP-070)."""
    problems: list[str] = []
    in_switch = has_arm = False
    for line in script.splitlines():
        stripped = line.strip()
        if re.search(r'case "\$\(uname -m\)" in', line):
            in_switch, has_arm = True, False
        elif in_switch:
            has_arm = has_arm or stripped.startswith("aarch64)")
            if stripped == "esac":
                in_switch = False
                if not has_arm:
                    problems.append("a uname -m switch without an aarch64 branch")
        elif re.search(r"\b(x86_64|amd64|aarch64|arm64)\b", line) and not stripped.startswith("#"):
            problems.append(stripped)
    return problems


def test_node_scripts_of_an_arm64_partition_carry_no_single_architecture_download() -> None:
    scripts = [s for s in _node_scripts_of("ai-training") if "partition gb300" in s]
    assert scripts, "ai-training renders no Grace (arm64) partition"
    assert "aarch64)" in scripts[0]  # the metrics exporters pick their arm64 build
    assert [p for s in _node_scripts_of("ai-training") for p in _single_arch_lines(s)] == []


def test_a_node_script_that_assumes_x86_is_caught() -> None:
    assert _single_arch_lines(UNPINNED_ENROOT.replace("$(dpkg --print-architecture)", "amd64")) != []
    assert _single_arch_lines('case "$(uname -m)" in\n  x86_64) a=amd64 ;;\nesac\n') == [
        "a uname -m switch without an aarch64 branch"
    ]


def _here_document_faults(script: str) -> list[str]:
    """Lines where a here-document's end marker is not a line of its own. bash ends a here-document only at a
    line that is exactly the delimiter (bash(1), "Here Documents"), so a marker glued to the line before (a template
    tag that swallowed the newline) lets the body run on into the next file it writes, and the script fails later,
    where nobody looks. Also a here-document that starts inside another one."""
    faults: list[str] = []
    inside = False
    for number, line in enumerate(script.splitlines(), start=1):
        if inside:
            if line == "HPCLZ_EOF":
                inside = False
            elif "HPCLZ_EOF" in line:
                faults.append(f"line {number}: {line[-120:]}")
        elif re.search(r"<<'?HPCLZ_EOF'?$", line):  # quoted or not
            inside = True
        elif "HPCLZ_EOF" in line:
            faults.append(f"line {number}: {line[-120:]}")
    if inside:
        faults.append("a here-document never ends")
    return faults


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_every_here_document_ends_on_a_line_of_its_own(preset: Path) -> None:
    for index, text in enumerate(_rendered_scripts(preset.stem)):
        assert _here_document_faults(text) == [], f"{preset.stem} script {index}"


def test_the_here_document_check_finds_a_glued_end_marker() -> None:
    glued = "cat > /a <<'HPCLZ_EOF'\nExecStart=/bin/true --x yHPCLZ_EOF\ncat > /b <<'HPCLZ_EOF'\n[Timer]\nHPCLZ_EOF\n"
    assert _here_document_faults(glued) == [
        "line 2: ExecStart=/bin/true --x yHPCLZ_EOF",
        "line 3: cat > /b <<'HPCLZ_EOF'",
    ]
    assert _here_document_faults("cat > /a <<'HPCLZ_EOF'\nx\nHPCLZ_EOF\n") == []
