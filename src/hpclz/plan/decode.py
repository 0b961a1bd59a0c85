"""Readable diffs of the values a VM carries encoded: `userData` (hpclz's cluster definition, gzip and base64
around JSON) and `customData` (cloud-init, gzip and base64), both unpacked by hpclz.render.payload. A diff of two
base64 strings says nothing; a diff of the CycleCloud cluster they carry (nodearrays, machine types, node counts,
mounts) says what changes on the cluster.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from hpclz.render.payload import unpack

ENCODED = ("userData", "customData")
_SECTION = re.compile(r"^\s*(\[+)\s*([^\]]+?)\s*\]+\s*$")
# `Key = value` and `Key := value` (a literal, not evaluated), as in Azure/cyclecloud-slurm templates/slurm.txt.
_SETTING = re.compile(r"^\s*([A-Za-z][\w.]*)\s*:?=\s*(.*?)\s*$")


def is_encoded(path: str) -> bool:
    return path.rsplit(".", 1)[-1] in ENCODED


def decode_text(value: Any) -> str | None:
    """The text inside a base64 value (gunzipped when gzip), or None when it is not one."""
    unpacked = unpack(value)
    return unpacked.text() if unpacked is not None else None


def cluster_template(text: str) -> dict[str, str]:
    """A CycleCloud cluster template as `section.key -> value` (`nodearray[gpu].MachineType`); multi-line
    values (CloudInit scripts) are kept whole under their key."""
    flat: dict[str, str] = {}
    sections: list[str] = []
    key: str | None = None
    in_block = False
    for line in text.splitlines():
        if in_block:
            flat[key or ""] += "\n" + line
            if line.strip().endswith("'''"):
                in_block = False
            continue
        section = _SECTION.match(line)
        if section:
            depth = len(section.group(1))
            sections = [*sections[: depth - 1], section.group(2)]
            continue
        setting = _SETTING.match(line)
        if setting and not line.lstrip().startswith("#"):
            key = ".".join([*(_name(x) for x in sections[1:]), setting.group(1)])  # [cluster NAME] is implied
            flat[key] = setting.group(2)
            in_block = setting.group(2).startswith("'''") and setting.group(2).count("'''") == 1
    return flat


def _name(section: str) -> str:
    """`nodearray gpu` -> `nodearray[gpu]`, `configuration` stays."""
    kind, _, name = section.partition(" ")
    return f"{kind}[{name}]" if name else kind


def _cluster_view(text: str) -> dict[str, Any] | None:
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(document, dict) or "template" not in document:
        return None
    view: dict[str, Any] = {"cluster": document.get("cluster")}
    for part in ("parameters", "account"):
        try:
            view[part] = json.loads(document.get(part) or "{}")
        except (json.JSONDecodeError, TypeError):
            view[part] = document.get(part)
    view["template"] = cluster_template(str(document.get("template") or ""))
    return view


def cluster_document(value: Any) -> dict[str, Any] | None:
    """The CycleCloud cluster a server's encoded userData carries (`cluster`, `parameters`, `account`, and `template`
    flattened by `cluster_template`), or None when the value is no such document."""
    text = decode_text(value)
    return _cluster_view(text) if text is not None else None


def readable(path: str, before: Any, after: Any) -> list[tuple[str, Any, Any]] | None:
    """(sub-path, before, after) for what changed inside two encoded values; None when they do not decode."""
    old, new = decode_text(before), decode_text(after)
    if old is None or new is None:
        return None
    old_view, new_view = _cluster_view(old), _cluster_view(new)
    if old_view is not None and new_view is not None:
        return _dict_changes(f"{path}:cluster", old_view, new_view)
    delta = list(difflib.ndiff(_lines(old), _lines(new)))
    removed = [line[2:] for line in delta if line.startswith("- ")]
    added = [line[2:] for line in delta if line.startswith("+ ")]
    return [(f"{path}:decoded", "\n".join(removed) or None, "\n".join(added) or None)]


_QUOTED = re.compile(r'^(\s*)(content|runcmd): (".*")$')


def _lines(text: str) -> list[str]:
    """cloud-init lines, with a file's `content: "..."` (one JSON-quoted line) opened into its own lines."""
    out: list[str] = []
    for line in text.splitlines():
        quoted = _QUOTED.match(line)
        if quoted:
            try:
                inner = json.loads(quoted.group(3))
            except json.JSONDecodeError:
                inner = None
            if isinstance(inner, str):
                out += [
                    f"{quoted.group(1)}{quoted.group(2)}: |",
                    *(f"{quoted.group(1)}  {x}" for x in inner.splitlines()),
                ]
                continue
        out.append(line)
    return out


def _dict_changes(path: str, old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = []
    for key in [*old, *(k for k in new if k not in old)]:
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        sub = f"{path}.{key}"
        if isinstance(before, dict) and isinstance(after, dict):
            out += _dict_changes(sub, before, after)
        else:
            out.append((sub, before, after))
    return out
