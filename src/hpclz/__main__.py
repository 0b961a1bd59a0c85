"""`python -m hpclz`: the console script by full interpreter path (how the scheduler's Run Command calls it)."""

from hpclz.cli import run

run()
