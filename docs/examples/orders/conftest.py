"""The `world` fixture comes from wfctl's pytest plugin (the `pytest11` entry point: installing
wfctl is enough). Imported here as well so these tests also run from a checkout whose installed
wfctl predates the plugin; drop this file in your own project."""

from wfctl.testing.plugin import (  # noqa: F401
    wfctl_testing_server,
    wfctl_testing_template,
    world,
)
