"""Node checks (HPCLZ-VFY-NNN). VERIFY_RULES lists every one, in order."""

from __future__ import annotations

from typing import Any

from hpclz.rules.base import Rule

VERIFY_RULES: tuple[type[Rule[Any]], ...] = ()
