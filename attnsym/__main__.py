"""``python -m attnsym`` runs the command-line tool (the same as ``attnsym``)."""

import sys

from .cli import console

sys.exit(console())
