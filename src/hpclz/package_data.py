"""Where the data shipped with hpclz lives: inside the wheel, or in the source checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent.parent


@cache
def data_dir(name: str) -> Path:
    """`templates`, `configs` or `docs`: the wheel ships them under hpclz/_data, a checkout at its root."""
    for candidate in (_PACKAGE / "_data" / name, _CHECKOUT / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"hpclz data folder '{name}' not found; the installation is incomplete")


def templates_dir() -> Path:
    return data_dir("templates")


def docs_dir() -> Path:
    """Where this installation keeps the documents that messages name under docs/."""
    return data_dir("docs")


def presets_dir() -> Path:
    return data_dir("configs")


def preset_names() -> list[str]:
    return sorted(p.stem for p in presets_dir().glob("*.yaml"))


def preset_path(name: str) -> Path:
    return presets_dir() / f"{name}.yaml"
