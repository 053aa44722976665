"""``python -m memstore``: the same as the ``memstore`` command."""

from memstore.cli import main

main(prog_name="memstore")
