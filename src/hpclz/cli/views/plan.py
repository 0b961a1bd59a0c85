"""`hpclz plan` for people: findings that need attention, then the change set (hpclz.cli.views.changeset)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpclz.cli.views.changeset import print_changeset
from hpclz.cli.views.findings import print_findings
from hpclz.cli.views.money import print_estimate, print_quota
from hpclz.plan.changeset import Action
from hpclz.severity import Severity

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.services.plan import PlanResult


def show(
    console: Console, result: CommandResult[PlanResult], *, show_noise: bool, show_attributes: bool = False
) -> None:
    body = result.payload
    print_findings(console, [f for f in result.findings if f.severity is not Severity.INFO])
    if body.changes is None:
        console.print(f"[red]✗[/] {body.file} fails validation; fix the errors above, then plan again")
        return
    print_changeset(
        console,
        body.changes,
        show_noise=show_noise,
        state_location=body.state_location,
        show_attributes=show_attributes,
    )
    hidden = sum(1 for r in body.changes.changed_resources if r.action is Action.CREATE and r.attributes)
    if hidden and not show_attributes and not body.changes.targets:
        console.print(f"[dim]Attributes of the {hidden} resources to create: --attributes or -o json shows them.[/]")
    for r in body.racks:
        part = f" and {r.part_rack_nodes} nodes of a part rack" if r.part_rack_nodes else ""
        console.print(
            f"partition {r.partition}: {r.nodes} x {r.vm_size} = {r.racks} rack(s) of {r.nodes_per_rack} "
            f"(one NVLink domain each){part}"
        )
    if body.estimate is not None:
        print_estimate(console, body.estimate)
    print_quota(console, body.quota, region=body.estimate.region if body.estimate else "REGION")
    if body.not_saved:
        from rich.markup import escape

        console.print(f"[red]✗[/] {escape(body.not_saved)}")
    if body.saved_to:
        console.print(
            f"Saved the plan to {body.saved_to}: apply it with `hpclz deploy {body.file} --plan {body.saved_to}`"
        )
