from __future__ import annotations

from pathlib import Path

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded


def render(
    config: Path = typer.Argument(..., metavar="CONFIG", help="Landing-zone config (YAML)."),
    out: Path = typer.Option(
        Path("rendered"), "--out", "--out-dir", "-d", metavar="DIR", help="Folder for templates and the manifest."
    ),
    diagram: bool = typer.Option(
        False,
        "--diagram",
        help="Also draw the network with the cluster (network.*) and the deployments (diagram.*): Mermaid and DOT, "
        "SVG and PNG where Graphviz is installed (it says so when not).",
    ),
    gates: bool = typer.Option(True, "--gates/--no-gates", help="Check the templates (ARM schemas, lint, checkov)."),
    template_format: str = typer.Option(
        "arm",
        "--format",
        metavar="arm|bicep",
        help="arm: ARM JSON templates; bicep: main.bicep and one module per deployment.",
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Render ARM templates, parameters and a manifest for every deployment of the landing zone."""
    with guarded("render", output):
        from hpclz.cli.views import render as view
        from hpclz.services.render import RenderOptions
        from hpclz.services.render import render as run_render

        options = RenderOptions(config, out, diagram=diagram, gates=gates, template_format=template_format)
        result = run_render(options)
        finish(result, output, view.show)
