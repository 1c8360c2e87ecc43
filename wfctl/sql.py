"""SQL lives in `sql/*.sql`, one commented file per query, loaded by name (as procrastinate does).

Python composes; SQL queries. Names are paths under `sql/` without the extension, e.g.
`load("world/catalog_columns")` or `load("checks/WF101")`.
"""

from __future__ import annotations

import functools
from pathlib import Path


def shipped(folder: str) -> Path:
    """A top-level folder of the source tree (`sql`, `migrations`), where wfctl reads it from:
    the checkout itself (an editable install, the tests), or its copy `wfctl/_<folder>` that
    an installed wheel carries (pyproject.toml maps the folders into the package)."""
    package = Path(__file__).resolve().parent
    installed = package / f"_{folder}"
    return installed if installed.is_dir() else package.parent / folder


SQL_DIR = shipped("sql")


@functools.cache
def load(name: str) -> str:
    """The text of `sql/<name>.sql`; raises FileNotFoundError naming the file."""
    path = SQL_DIR / f"{name}.sql"
    if not path.is_file():
        raise FileNotFoundError(f"no SQL file {path}")
    return path.read_text(encoding="utf-8")


def names(folder: str) -> list[str]:
    """The query names in one folder of `sql/`, sorted."""
    return sorted(f"{folder}/{p.stem}" for p in (SQL_DIR / folder).glob("*.sql"))
