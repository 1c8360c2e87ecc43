"""`python -m wfctl` runs the CLI."""

from wfctl.cli import run

run()
