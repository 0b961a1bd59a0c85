"""Template lint rules (HPCLZ-TPL-NNN), in the spirit of arm-ttk. TEMPLATE_RULES lists every one."""

from __future__ import annotations

from typing import Any

from hpclz.rules.base import Rule

TEMPLATE_RULES: tuple[type[Rule[Any]], ...] = ()
