"""The command line: the typer app (`app.py`), one module per command (`commands/`),
output formats (`output.py`) and the entry point (`main.py`)."""
