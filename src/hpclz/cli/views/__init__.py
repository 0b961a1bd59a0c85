"""Human printers, one module per command (as terraform's views): each takes the command's CommandResult.

The JSON printer is one for all commands: CommandResult.envelope() (hpclz.output). hpclz.cli.common.finish
picks between them.
"""
