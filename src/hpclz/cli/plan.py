from __future__ import annotations

from pathlib import Path

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded


def plan(
    config: Path = typer.Argument(..., metavar="CONFIG", help="Landing-zone config (YAML)."),
    what_if: bool = typer.Option(
        False, "--what-if", help="Ask Azure (ARM what-if) instead of comparing with the state offline."
    ),
    show_noise: bool = typer.Option(False, "--show-noise", help="Also show what-if changes filtered as noise."),
    attributes: bool = typer.Option(
        False,
        "--attributes",
        help="Show every attribute of each resource to create (always in -o json; with --target, the targets' "
        "attributes are shown without it).",
    ),
    out: Path | None = typer.Option(
        None, "--out", metavar="FILE", help="Save the plan for `hpclz deploy --plan FILE`."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out file (never the config)."),
    detailed_exitcode: bool = typer.Option(
        False, "--detailed-exitcode", help="Exit 0 with no changes, 1 on error, 2 when changes are present."
    ),
    refresh: bool = typer.Option(
        True,
        "--refresh/--no-refresh",
        help="Read the recorded resources back from Azure and show what changed outside hpclz (the default); "
        "--refresh=false compares with the state only, offline.",
        show_default=False,
    ),
    refresh_only: bool = typer.Option(False, "--refresh-only", help="Show only what changed outside hpclz."),
    destroy: bool = typer.Option(False, "--destroy", help="Show what `hpclz destroy` would delete."),
    include_data: bool = typer.Option(
        False, "--include-data", help="With --destroy: as `hpclz destroy --include-data` (data-bearing resources too)."
    ),
    replace: list[str] = typer.Option(
        [], "--replace", metavar="ADDRESS", help="Resource ID (or Type/name) to delete and create again (repeatable)."
    ),
    target: list[str] = typer.Option(
        [],
        "--target",
        metavar="ADDRESS",
        help="Only the deployment holding this resource, and what it depends on (repeatable).",
    ),
    suppress: list[str] = typer.Option([], "--suppress", metavar="ID", help="Rule ID to silence (repeatable)."),
    hours: float | None = typer.Option(
        None,
        "--hours",
        metavar="N",
        min=0,
        max=730,
        help="Hours a month each partition runs at max_nodes in the cost estimate (default: budget.partition_hours, "
        "else 730).",
    ),
    offline: bool = typer.Option(
        False,
        "--offline",
        help="Read nothing from the network: no retail prices (the cache or the shipped snapshot), no Azure "
        "(as --refresh=false).",
    ),
    prices_endpoint: str | None = typer.Option(
        None,
        "--prices-endpoint",
        envvar="HPCLZ_PRICES_ENDPOINT",
        metavar="URL",
        help="Retail Prices API URL read when the price cache is stale (default: prices.azure.com).",
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Show what a deploy would change, its operational impact (drain, restart, data) and its monthly cost."""
    with guarded("plan", output):
        from hpclz.cli.views import plan as view
        from hpclz.services.plan import PlanOptions
        from hpclz.services.plan import plan as run_plan

        options = PlanOptions(
            config=config,
            what_if=what_if,
            out=out,
            force=force,
            detailed_exitcode=detailed_exitcode,
            suppress=tuple(suppress),
            refresh=refresh,
            refresh_only=refresh_only,
            destroy=destroy,
            include_data=include_data,
            replace=tuple(replace),
            target=tuple(target),
            hours=hours,
            offline=offline,
            prices_endpoint=prices_endpoint,
        )
        result = run_plan(options)
        finish(
            result,
            output,
            lambda console, shown: view.show(console, shown, show_noise=show_noise, show_attributes=attributes),
        )
