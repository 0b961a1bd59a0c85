"""Slurm accounting's MySQL flexible server: a major release Azure still supports in standard support."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.arm.walk import as_dict
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext

MYSQL = "microsoft.dbformysql/flexibleservers"
# Majors out of Azure's standard support, with the day it ended (learn.microsoft.com/azure/mysql/concepts-version-
# policy, "Retired MySQL engine versions" table: 5.7 standard support ended 2026-03-31, 8.0 on 2026-05-31; each is
# billed as extended support from the next day). "8.0.21" is how ARM names MySQL 8.0 ("8.0.21 stands for MySQL 8.0",
# azure-resource-manager-schemas@a1454431 schemas/2025-12-01-preview/Microsoft.DBforMySQL.FlexibleServers.json).
EXTENDED_SUPPORT = {"5.7": "2026-03-31", "8.0": "2026-05-31"}


class MysqlOnStandardSupport(Rule[TemplateContext]):
    """The Slurm accounting server runs a MySQL major in Azure's standard support. Azure enrols a server on a major
    past its standard support in paid extended support automatically, with security fixes only, and retires it at the
    end of that (learn.microsoft.com/azure/mysql/concepts-version-policy). MySQL 8.4 is the current LTS major; an
    8.0 server upgrades to it in place ("from MySQL 5.7 to 8.0 or 8.0 to 8.4",
    learn.microsoft.com/azure/mysql/flexible-server/how-to-upgrade)."""

    id = "HPCLZ-TPL-054"
    severity = Severity.ERROR
    title = "MySQL flexible server on a major out of Azure's standard support"
    fix = 'Set properties.version to "8.4" (an 8.0 server upgrades in place; back it up first, it cannot go back).'

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for found in ctx.resources:
            if found.type.lower() != MYSQL:
                continue
            version = as_dict(found.resource.get("properties")).get("version")
            major = ".".join(str(version).split(".")[:2])
            if isinstance(version, str) and major in EXTENDED_SUPPORT:
                yield self.finding(
                    ctx,
                    (*found.path, "properties", "version"),
                    f"{found.name}: MySQL {major} ({version}) left Azure's standard support on "
                    f"{EXTENDED_SUPPORT[major]} and is billed as extended support",
                )
