"""Config rules, one module per design area. CONFIG_RULES lists every one, in order."""

from __future__ import annotations

from typing import Any

from hpclz.rules.base import Rule

CONFIG_RULES: tuple[type[Rule[Any]], ...] = ()
