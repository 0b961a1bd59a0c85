"""The one list of hpclz's commands.

The CLI registers its commands and groups from it (hpclz.cli, at import); the JSON envelope of a usage error
names its command from it; docs/commands.md is generated from it (hpclz.docsgen), and the JSON exit-path and
output-contract tests cover every command it lists. A command missing here does not exist.

This module imports only the argument parsers in hpclz.cli (typer, no service): `hpclz --help` reads it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from hpclz.cli import (
    checkpoints,
    deploy,
    destroy,
    explain,
    init,
    nodes,
    plan,
    prices,
    render,
    schema,
    state,
    validate,
    verify,
)


@dataclass(frozen=True)
class Group:
    """A word that takes a subcommand (`hpclz state show`); its help is the group's line in `hpclz --help`."""

    name: str
    help: str


@dataclass(frozen=True)
class Command:
    """One command as typed after `hpclz` (`validate`, `checkpoints manifest`), the function that parses its
    arguments, and the services it calls, each `module:function` returning a CommandResult (none: it prints
    a file or writes one, and has no -o json)."""

    name: str
    parse: Callable[..., None]
    services: tuple[str, ...] = ()

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.name.split())

    @property
    def group(self) -> str | None:
        return self.words[0] if len(self.words) > 1 else None

    @property
    def takes_json(self) -> bool:
        """`-o json`: every command whose parser has the shared `output` option (hpclz.cli.common.OUTPUT_OPTION)."""
        return "output" in inspect.signature(self.parse).parameters


GROUPS: tuple[Group, ...] = (
    Group("state", "Inspect the recorded state of a landing zone, release a stale lock, forget or adopt a resource."),
    Group("checkpoints", "Seal checkpoint blobs in a SHA-256 manifest, and prove later that none changed."),
    Group("prices", "Retail prices for the cost estimate: refresh the local cache from the Azure Retail Prices API."),
    Group(
        "nodes",
        "Roll a partition's nodes onto a new node definition through Slurm, and follow the roll; repair faulty "
        "nodes without a human, and follow the repairs.",
    ),
)

COMMANDS: tuple[Command, ...] = (
    Command("validate", validate.validate, ("hpclz.services.validate:validate",)),
    Command("schema", schema.schema),
    Command("init", init.init),
    Command("deploy", deploy.deploy, ("hpclz.services.deploy:deploy",)),
    Command("destroy", destroy.destroy, ("hpclz.services.destroy:destroy",)),
    Command("render", render.render, ("hpclz.services.render:render",)),
    Command("plan", plan.plan, ("hpclz.services.plan:plan",)),
    Command("verify", verify.verify, ("hpclz.services.verify:verify",)),
    Command(
        "explain",
        explain.explain,
        ("hpclz.services.explain:explain", "hpclz.services.explain:every_rule", "hpclz.services.explain:doc_page"),
    ),
    Command("state show", state.show, ("hpclz.services.state:show_state",)),
    Command("state unlock", state.unlock, ("hpclz.services.state:unlock_state",)),
    Command("state forget", state.forget, ("hpclz.services.state:forget_state",)),
    Command("state adopt", state.adopt, ("hpclz.services.state:adopt_state",)),
    Command("checkpoints manifest", checkpoints.manifest, ("hpclz.services.checkpoints:write_manifest",)),
    Command("checkpoints verify", checkpoints.verify, ("hpclz.services.checkpoints:verify_checkpoints",)),
    Command("prices refresh", prices.refresh, ("hpclz.services.prices:refresh_prices",)),
    Command("nodes roll", nodes.roll, ("hpclz.services.nodes:roll",)),
    Command("nodes status", nodes.status, ("hpclz.services.nodes:status",)),
    Command("nodes repair", nodes.repair, ("hpclz.services.repair:repair",)),
    Command("nodes incidents", nodes.incidents, ("hpclz.services.repair:incidents",)),
)


def command_named(args: list[str]) -> str:
    """The command a command line asks for, read from its words: the longest name of the table its leading
    words spell (an option's value, such as `json` in `-o json`, never completes a name), else the group it
    names, else `hpclz`."""
    words = [a for a in args if not a.startswith("-")][:2]
    names = {c.name for c in COMMANDS} | {g.name for g in GROUPS}
    for length in (2, 1):
        name = " ".join(words[:length])
        if len(words) >= length and name in names:
            return name
    return "hpclz"
