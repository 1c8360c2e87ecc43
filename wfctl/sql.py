"""SQL lives in `sql/*.sql`, one commented file per query, loaded by name (as procrastinate does).

Python composes; SQL queries. Names are paths under `sql/` without the extension, e.g.
`load("world/catalog_columns")` or `load("checks/WF101")`.

A file may include another one by name, `{{writer/insert_events_with_ids}}`: the included
file's text (its statement without the final `;`) stands in its place, e.g. as the body of a
CTE, so one statement can be built from the same SQL another one sends alone (the runtime's
folded step transaction embeds the event writer's INSERT). `{{name a=b c=d}}` renames, inside
the included text, the parameter `%(a)s` to `%(b)s` (two fragments that name different values
alike) and an include of `a` to one of `b` (a variant of a composed statement that embeds
another fragment).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
_INCLUDE = re.compile(r"\{\{\s*([\w/]+)((?:\s+[\w/]+=[\w/]+)*)\s*\}\}")
_PARAMETER = re.compile(r"%\((\w+)\)s")


def _read(name: str) -> str:
    path = SQL_DIR / f"{name}.sql"
    if not path.is_file():
        raise FileNotFoundError(f"no SQL file {path}")
    return path.read_text(encoding="utf-8")


def _expand(name: str, renames: tuple[tuple[str, str], ...], seen: tuple[str, ...]) -> str:
    if name in seen:
        raise ValueError(f"SQL include cycle: {' -> '.join((*seen, name))}")
    mapping = dict(renames)
    text = _read(name)

    def include(m: re.Match[str]) -> str:
        target = mapping.get(m.group(1), m.group(1))
        own = [(a, b) for a, _, b in (pair.partition("=") for pair in m.group(2).split())]
        # the includer's include renames reach the fragments the included file includes
        passed = [(a, b) for a, b in renames if "/" in a]
        inner = _expand(target, (*own, *passed), (*seen, name))
        # a newline after it: a fragment's last line may be a comment
        return inner.rstrip().removesuffix(";").rstrip() + "\n"

    text = _INCLUDE.sub(include, text)
    if not mapping:
        return text
    return _PARAMETER.sub(lambda m: f"%({mapping.get(m.group(1), m.group(1))})s", text)


@functools.cache
def load(name: str) -> str:
    """The text of `sql/<name>.sql`, its includes expanded; raises FileNotFoundError naming
    the file."""
    return _expand(name, (), ())


def names(folder: str) -> list[str]:
    """The query names in one folder of `sql/`, sorted."""
    return sorted(f"{folder}/{p.stem}" for p in (SQL_DIR / folder).glob("*.sql"))
