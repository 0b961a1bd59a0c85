"""`hpclz plan` as text, in terraform's shape: symbols, nested property diffs, one summary line.

Colour comes from rich, which drops it when NO_COLOR is set or output is not a terminal. Every
value from the config or a template is escaped: `partitions[gpu]` must not read as markup.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from hpclz.plan.attributes import SENSITIVE
from hpclz.plan.changeset import (
    Action,
    ChangeSet,
    ClusterLine,
    ConfigChange,
    EntraChanges,
    NodeScripts,
    Policy,
    PropertyChange,
    ResourceChange,
    Verdict,
)

if TYPE_CHECKING:
    from rich.console import Console

SYMBOLS = {
    Action.CREATE: ("+", "green"),
    Action.MODIFY: ("~", "yellow"),
    Action.DELETE: ("-", "red"),
    Action.REPLACE: ("-/+", "bold magenta"),
    Action.NO_CHANGE: ("=", "dim"),
}
HEADINGS = {
    Action.CREATE: "will be created",
    Action.MODIFY: "will be updated in place",
    Action.DELETE: "will be destroyed",
    Action.REPLACE: "must be replaced",
}
LEGEND = """Resource actions are indicated with the following symbols:
  [green]+[/] create
  [yellow]~[/] update in-place
  [red]-[/] destroy
[bold magenta]-/+[/] destroy and then create replacement"""
MAX_VALUE = 100


def value(v: Any) -> str:
    """A value on one line, whole: a plan that cuts values hides the very change it shows."""
    if v == SENSITIVE:  # a marker, not a value: unquoted as terraform prints `(sensitive value)`
        return SENSITIVE
    text = json.dumps(v, sort_keys=True, ensure_ascii=False) if not isinstance(v, str) else json.dumps(v)
    return escape(text)


def _long(v: Any) -> bool:
    """Shown over several lines: text with line breaks (scripts), nested values too wide for one line."""
    if isinstance(v, str):
        return "\n" in v
    return isinstance(v, dict | list) and len(json.dumps(v, ensure_ascii=False)) > MAX_VALUE


def _block(v: Any, mark: str, style: str, pad: str) -> str:
    text = v if isinstance(v, str) else json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)
    return "".join(f"\n{pad}[{style}]{mark} {escape(line)}[/]" for line in text.splitlines() or [""])


def _symbol(action: Action) -> str:
    mark, style = SYMBOLS[action]
    return f"[{style}]{mark:>3}[/]"


def _cost(verdict: Verdict) -> str:
    policy = verdict.policy
    words = "; ".join(escape(p) for p in (verdict.reason, verdict.action_needed) if p)
    if policy is Policy.REPLACE_DATA:
        return f"[bold red]DATA LOSS: {words}[/]"
    if policy is Policy.NOT_ALLOWED:
        return f"[bold red]NOT ALLOWED: {words}[/]"
    if policy in (Policy.DRAIN_PARTITION, Policy.RESTART_NODES, Policy.REPLACE):
        return f"[yellow]{words}[/]"
    return f"[dim]{words}[/]"


def _edit(change: ConfigChange | PropertyChange, removed_value: bool, pad: str = "      ") -> str:
    """`path: before -> after`; an addition shows its value, a removal its old one only if `removed_value`.
    Long values go below the path, line by line, `-` before and `+` after."""
    path = escape(change.path)
    show_before = change.kind is Action.MODIFY or (change.kind is Action.DELETE and removed_value)
    show_after = change.kind in (Action.MODIFY, Action.CREATE)
    if (show_before and _long(change.before)) or (show_after and _long(change.after)):
        body = f"{path}:"
        if show_before:
            body += _block(change.before, "-", "red", pad)
        if show_after:
            body += _block(change.after, "+", "green", pad)
        return body
    if change.kind is Action.MODIFY:
        return f"{path}: {value(change.before)} -> {value(change.after)}"
    if change.kind is Action.CREATE:
        return f"{path}: {value(change.after)}"
    return f"{path}: {value(change.before)} -> null" if removed_value else path


def config_line(change: ConfigChange) -> str:
    return f"{_symbol(change.kind)} {_edit(change, removed_value=False)}  ({_cost(change.verdict)})"


def property_line(change: PropertyChange, noise: bool = False) -> str:
    body = _edit(change, removed_value=True, pad=" " * 12)
    if noise:
        return f"      [dim]{_symbol(change.kind)} {body}  # noise: {escape(change.noise_reason)}[/]"
    note = "  [bold magenta]# forces replacement[/]" if change.forces_replacement else ""
    return f"      {_symbol(change.kind)} {body}{note}"


def attribute_line(change: PropertyChange) -> str:
    """`+ path = value` (terraform's create), long values below it line by line; an encoded userData or
    customData as the size of what it carries (`hpclz render` writes it out whole)."""
    from hpclz.plan.decode import decode_text, is_encoded

    path = escape(change.path)
    text = decode_text(change.after) if is_encoded(change.path) else None
    if text is not None:
        return f"      {_symbol(Action.CREATE)} {path} = [dim](base64, {len(text.splitlines())} lines decoded)[/]"
    if _long(change.after):
        return f"      {_symbol(Action.CREATE)} {path} ={_block(change.after, '+', 'green', ' ' * 12)}"
    return f"      {_symbol(Action.CREATE)} {path} = {value(change.after)}"


def _hidden(count: int) -> str:
    return f"      [dim]# ({count} unchanged attribute{'' if count == 1 else 's'} hidden)[/]"


def title_of(change: ResourceChange) -> str:
    """Type and readable label (role assignments: role -> principal at scope); the ID still identifies it."""
    return f"{escape(change.type)} {escape(change.label or change.name)}"


def resource_lines(change: ResourceChange, show_noise: bool, show_attributes: bool = False) -> list[str]:
    """A create is one line, with every attribute below it when `show_attributes`; an update shows each changed
    property and how many stay as they are."""
    where = f" (deployment {escape(change.deployment)})" if change.deployment else ""
    title = title_of(change)
    v = change.verdict
    if change.action is Action.CREATE:
        attributes = [attribute_line(a) for a in change.attributes] if show_attributes else []
        return [f"{_symbol(change.action)} {title}[dim]{where}[/]", *attributes]
    if change.action is Action.DELETE and not change.data_loss:
        return [f"{_symbol(change.action)} {title}[dim]{where}[/]"]
    lines = [f"  [bold]# {title}[/] {HEADINGS[change.action]}{where}"]
    if (
        change.data_loss
        or v.action_needed
        or v.policy in (Policy.NOT_ALLOWED, Policy.DRAIN_PARTITION, Policy.RESTART_NODES)
    ):
        lines.append(f"  # {_cost(v)}")
    lines.append(f"{_symbol(change.action)} {title}")
    lines.extend(property_line(p) for p in change.changes)
    if show_noise:
        lines.extend(property_line(p, noise=True) for p in change.noise)
    if change.unchanged_attributes:
        lines.append(_hidden(change.unchanged_attributes))
    return lines


def resource_lines_quiet(change: ResourceChange) -> list[str]:
    """A resource what-if reported only noise for: shown with --show-noise, as unchanged."""
    title = title_of(change)
    return [f"{_symbol(Action.NO_CHANGE)} {title}", *(property_line(p, noise=True) for p in change.noise)]


def follow_ups(cs: ChangeSet, most: int = 3) -> list[str]:
    """Each in-place follow-up once, naming what it is about: `Security/pricings VirtualMachines, ...: agree ...`."""
    about: dict[str, list[str]] = {}
    for r in cs.changed_resources:
        if r.verdict.policy is Policy.IN_PLACE and r.verdict.action_needed:
            about.setdefault(r.verdict.action_needed, []).append(
                f"{r.type.removeprefix('Microsoft.')} {r.label or r.name}"
            )
    lines = []
    for action, what in sorted(about.items()):
        more = f" and {len(what) - most} more" if len(what) > most else ""
        lines.append(f"{', '.join(what[:most])}{more}: {action}")
    return lines


def impacts(cs: ChangeSet) -> list[str]:
    """Operational impact, one line each: what the engineer must do or will lose before applying.
    ("Impact", not "Cost": money is the estimate's word, hpclz.cli.views.money.)"""
    out = []
    drains = sorted({c.verdict.action_needed for c in cs.config_changes if c.verdict.policy is Policy.DRAIN_PARTITION})
    out += [escape(d) for d in drains if d]
    out += [escape(f) for f in follow_ups(cs)]
    policies = [c.verdict.policy for c in cs.config_changes] + [r.verdict.policy for r in cs.changed_resources]
    scripts = cs.node_scripts
    if scripts is not None and scripts.steps and scripts.scheduler:
        out.append(
            "the scheduler is replaced after the deploy (Node scripts): slurmctld is down until its new VM has booted; "
            "running jobs keep running under raised SlurmdTimeout and SlurmctldTimeout"
        )
    if scripts is not None and scripts.steps and (scripts.partitions or scripts.login):
        out.append(
            "nodes running now keep their old CloudInit until replaced (Node scripts): "
            + ", ".join([*(f"partition {p}" for p in scripts.partitions), *(["login nodes"] if scripts.login else [])])
        )
    if Policy.RESTART_NODES in policies:
        out.append("nodes restart: plan a maintenance window")
    if cs.data_loss:
        out.append(f"[bold red]DATA LOSS: {escape(', '.join(cs.data_loss))}[/]")
    if cs.blocked:
        out.append(f"[bold red]NOT ALLOWED (apply would fail): {escape(', '.join(cs.blocked))}[/]")
    return out


def print_changeset(
    out: Console, cs: ChangeSet, *, show_noise: bool = False, state_location: str = "", show_attributes: bool = False
) -> None:
    """`show_attributes`: every created resource's attributes; without it only those of the `--target` ones."""
    against = (
        f"state serial {cs.state.serial} (lineage {cs.state.lineage[:8]})"
        if cs.state
        else f"no state{f' at {escape(state_location)}' if state_location else ''}: everything is new"
    )
    out.print(f"[bold]hpclz plan[/] {escape(cs.landing_zone)}-{escape(cs.environment)} ({cs.mode}, against {against})")
    _config_section(out, cs)
    _cluster_section(out, cs)
    _upgrade_section(out, cs)
    _scripts_section(out, cs)
    _drift_section(out, cs, show_noise)
    changed = cs.changed_resources
    if not changed and not cs.config_changes and not cs.drift:
        out.print("\n[green]No changes.[/] The landing zone matches the configuration.")
    if cs.mode == "offline" and not cs.refreshed and cs.state is not None:
        out.print("[dim]Compared with the state only (--refresh=false); Azure was not read, so drift is not shown.[/]")
    _actions_section(out, cs, show_noise, show_attributes)
    if show_noise:
        _noise_section(out, cs)
    for item in cs.unsupported:
        out.print(f"[yellow]! what-if could not evaluate {escape(item)}[/]")
    for item in cs.left_alone:
        out.print(f"[yellow]! left alone, not proved this zone's: {escape(item)}[/]")
    out.print(f"[bold]{cs.summary.line()}[/]")
    for line in impacts(cs):
        out.print(f"Impact: {line}")
    if cs.noise_count:
        hint = "" if show_noise else " (--show-noise shows them)"
        source = "" if cs.mode == "offline" else "what-if "
        out.print(f"[dim]{cs.noise_count} {source}changes filtered as noise{hint}.[/]")
    if cs.entra is not None:
        out.print("\n".join(entra_lines(cs.entra)), highlight=False)


def _config_section(out: Console, cs: ChangeSet) -> None:
    if cs.config_changes:
        out.print("\nConfig changes since the last apply:")
        for edit in cs.config_changes:
            out.print(config_line(edit))
    elif cs.state and not cs.config_baseline:
        out.print("\n[dim]The state holds no applied config, so config-level changes cannot be listed.[/]")


def cluster_line(line: ClusterLine) -> list[str]:
    """`+ partition gpu: 8 x Standard_ND96isr_H100_v5 (0-8 nodes, spot), image ...`, then each changed field."""
    symbol = _symbol(line.action) if line.action is not None else "[dim]  ?[/]"
    who = f"partition {line.name}" if line.role == "partition" else line.role
    body = f"{symbol} {escape(who)}: {escape(line.summary())}, image {escape(line.image)}"
    if line.action is Action.MODIFY or (line.action is Action.DELETE and line.verdict.reason):
        body += f"  ({_cost(line.verdict)})"
    return [body, *(f"      {config_line(c)}" for c in line.changes if line.action is Action.MODIFY)]


def _cluster_section(out: Console, cs: ChangeSet) -> None:
    """The VMs CycleCloud creates from the cluster template: ARM and what-if never list them."""
    if not cs.cluster:
        return
    unknown = any(line.action is None for line in cs.cluster)
    note = "; ? = unknown, the state holds no applied config" if unknown else ""
    out.print(f"\nCluster (CycleCloud creates these nodes from the cluster template{note}):")
    for line in cs.cluster:
        out.print("\n".join(cluster_line(line)), highlight=False)


def _upgrade_section(out: Console, cs: ChangeSet) -> None:
    up = cs.stack_upgrade
    if up is None:
        return
    out.print(f"\nStack upgrade: {escape(up.source)} -> {escape(up.target)}")
    if not up.allowed:
        out.print(f"  [bold red]NOT ALLOWED: {escape(up.reason)}[/]")
        if up.road:
            out.print("  Deploy one triple at a time, in this order:")
            out.print("\n".join(f"    {n}. {escape(t)}" for n, t in enumerate(up.road, start=1)))
        return
    out.print(f"  [dim]{escape(up.reason)} ({escape(up.source_doc)}); in this order:[/]")
    out.print("\n".join(f"    {escape(step)}" for step in up.steps))


def scripts_lines(scripts: NodeScripts) -> list[str]:
    """Which running nodes keep old scripts, and the steps after the deploy (or what already replaces them)."""
    which = [f"scheduler ({', '.join(scripts.scheduler)})"] if scripts.scheduler else []
    which += ["login nodes (CloudInit)"] if scripts.login else []
    which += [f"partition {p} (CloudInit)" for p in scripts.partitions]
    lines = [
        "Node scripts: a running node keeps what its VM was created with; these differ from the cluster definition "
        f"last applied: {', '.join(which)}"
    ]
    if scripts.covered_by:
        return [*lines, f"  covered by {scripts.covered_by}"]
    return [*lines, "  after the deploy, in this order:", *(f"    {step}" for step in scripts.steps)]


def _scripts_section(out: Console, cs: ChangeSet) -> None:
    if cs.node_scripts is not None:
        out.print("\n" + escape("\n".join(scripts_lines(cs.node_scripts))), highlight=False)


def _print_resources(
    out: Console, resources: list[ResourceChange], show_noise: bool, attributes_of: Callable[[str], bool] | None = None
) -> None:
    """`attributes_of(id)`: whether that resource's attributes are shown (a create's)."""
    # One print for the whole list: each rich Console.print call renders on its own, and one call per resource
    # (132 for the energy preset) was about 6 % of `hpclz plan` (cProfile); the text printed is the same.
    blocks = []
    for resource in resources:
        lines = resource_lines(resource, show_noise, attributes_of is not None and attributes_of(resource.id))
        blocks.append("\n".join(lines) + ("\n" if len(lines) > 1 else "") + "\n")
    if blocks:
        out.print("".join(blocks), end="")


def _drift_section(out: Console, cs: ChangeSet, show_noise: bool) -> None:
    """Found by refresh (the default): apart from the actions, as terraform shows "changed outside of Terraform"."""
    if cs.drift:
        out.print("\n[bold]Changed outside hpclz[/] (found by reading Azure back; deploy puts it back):\n")
        _print_resources(out, cs.drift, show_noise)


def _actions_section(out: Console, cs: ChangeSet, show_noise: bool, show_attributes: bool) -> None:
    changed = cs.changed_resources
    if not changed:
        return
    out.print("\n" + LEGEND + "\n\nhpclz will perform the following actions:\n")
    if cs.mode == "what-if":
        # What-if compares the templates with Azure as it is, so drift shows here too; deploy submits only
        # changed templates, and puts drift back when it reads Azure (its default refresh).
        out.print(
            "[dim](ARM what-if: changes made outside hpclz are listed too; `hpclz deploy` puts those back unless"
            " run with --refresh=false)[/]\n"
        )
    targets = {t.lower() for t in cs.targets}
    _print_resources(out, changed, show_noise, lambda rid: show_attributes or rid.lower() in targets)


def _noise_section(out: Console, cs: ChangeSet) -> None:
    for quiet in cs.resources:
        if quiet.action is Action.NO_CHANGE and quiet.noise:
            out.print("\n".join(resource_lines_quiet(quiet)))
    out.print("\n".join(f"  [dim]* ignored by what-if: {escape(rid)}[/]" for rid in cs.ignored))


def entra_lines(entra: EntraChanges) -> list[str]:
    """Another authority than ARM, apart from ARM's summary: each app role assignment (`=` kept as recorded), its
    own summary line, what may refuse it, and whether Graph was read."""
    lines = [
        f"\n[bold]{escape(entra.authority)}[/] (through {escape(entra.via)}, not ARM): app role assignments in "
        f"CycleCloud's app {escape(entra.app_id)}"
    ]
    for a in entra.assignments:
        what = f"{_symbol(a.action)} app role {escape(a.label)}"
        what += f"  [dim]\\[{escape(a.id)}][/]" if a.id else ""
        lines.append(what + (f"  [dim]# {escape(a.reason)}[/]" if a.reason else ""))
    lines += [f"[yellow]! left alone, not proved this zone's: {escape(item)}[/]" for item in entra.left_alone]
    counts = entra.summary
    lines.append(f"[bold]Entra ID: {counts.add} to add, {counts.destroy} to destroy.[/]")
    if entra.changed:
        lines.append(f"[dim]These are {escape(entra.note)}.[/]")
    if entra.not_read:
        lines.append(f"[dim]Microsoft Graph not read ({escape(entra.not_read)}); listed from the state and config.[/]")
    return lines
