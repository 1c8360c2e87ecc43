"""wfctl: keep self-hosted @workflow/world-postgres worlds healthy."""

__version__ = "0.1.0"
