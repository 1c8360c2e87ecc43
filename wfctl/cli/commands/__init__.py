"""One module per command; importing a module registers its command on `wfctl.cli.app.app`."""
