"""`python -m wfctl` runs the CLI."""

from wfctl.cli.main import run

run()
