"""Where the data shipped with hpclz lives: inside the wheel, or in the source checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent.parent


@cache
def data_dir(name: str) -> Path:
    """`templates` or `configs`: the wheel ships them under hpclz/_data, a checkout at its root."""
    for candidate in (_PACKAGE / "_data" / name, _CHECKOUT / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"hpclz data folder '{name}' not found; the installation is incomplete")


def templates_dir() -> Path:
    return data_dir("templates")


def presets_dir() -> Path:
    return data_dir("configs")


def preset_names() -> list[str]:
    return sorted(p.stem for p in presets_dir().glob("*.yaml"))


def preset_path(name: str) -> Path:
    return presets_dir() / f"{name}.yaml"
