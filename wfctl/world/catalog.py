"""A normalised description of a world's catalog, read from pg_catalog, and a diff of two.

Compared: enums (labels in order), tables, columns (position, type, nullability, default),
constraints, indexes (full definition incl. partial predicates) and sequences. Not compared:
owners, grants, OIDs, dropped-column history. The shape is plain JSON so an expected catalog
can be kept as data (`wfctl/data/catalog_<era>.json`) and checked against the real package.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from wfctl import sql

WORLD_SCHEMAS = ("workflow", "workflow_drizzle")
DATA_DIR = Path(__file__).resolve().parent.parent / "data"

Catalog = dict[str, Any]


def describe(conn: psycopg.Connection[Any], schemas: tuple[str, ...] = WORLD_SCHEMAS) -> Catalog:
    """Read the catalog of `schemas`; enums are also read from `public` (pre-0015 worlds)."""
    params = {"schemas": list(schemas)}
    with conn.cursor(row_factory=dict_row) as cur:
        tables: dict[str, Any] = {}
        for row in cur.execute(sql.load("world/catalog_columns"), params):
            table = tables.setdefault(
                f"{row['schema']}.{row['table']}",
                {"columns": [], "constraints": {}, "indexes": {}},
            )
            table["columns"].append([row["column"], row["type"], row["not_null"], row["default"]])
        for row in cur.execute(sql.load("world/catalog_constraints"), params):
            key = f"{row['schema']}.{row['table']}"
            tables.setdefault(key, {"columns": [], "constraints": {}, "indexes": {}})
            tables[key]["constraints"][row["name"]] = row["definition"]
        for row in cur.execute(sql.load("world/catalog_indexes"), params):
            key = f"{row['schema']}.{row['table']}"
            definition = row["definition"] + ("" if row["valid"] else " [INVALID]")
            tables.setdefault(key, {"columns": [], "constraints": {}, "indexes": {}})
            tables[key]["indexes"][row["index"]] = definition
        enums = {
            f"{row['schema']}.{row['name']}": list(row["labels"])
            for row in cur.execute(
                sql.load("world/catalog_enums"), {"schemas": [*schemas, "public"]}
            )
        }
        sequences = {
            f"{row['schema']}.{row['name']}": {
                "type": row["type"],
                "start": int(row["start"]),
                "increment": int(row["increment"]),
                "owned_by": row["owned_by"],
            }
            for row in cur.execute(sql.load("world/catalog_sequences"), params)
        }
    return {"enums": enums, "tables": tables, "sequences": sequences}


def diff(expected: Catalog, actual: Catalog) -> list[str]:
    """Human-readable differences, one line each; empty when the catalogs are identical."""
    out: list[str] = []
    _diff_keys(out, "enum", expected["enums"], actual["enums"])
    for name in sorted(set(expected["enums"]) & set(actual["enums"])):
        if expected["enums"][name] != actual["enums"][name]:
            out.append(
                f"enum {name}: labels {actual['enums'][name]} != expected {expected['enums'][name]}"
            )
    _diff_keys(out, "table", expected["tables"], actual["tables"])
    for name in sorted(set(expected["tables"]) & set(actual["tables"])):
        exp, act = expected["tables"][name], actual["tables"][name]
        exp_cols = {c[0]: c for c in exp["columns"]}
        act_cols = {c[0]: c for c in act["columns"]}
        _diff_keys(out, f"column {name}.", exp_cols, act_cols, join="")
        for col in sorted(set(exp_cols) & set(act_cols)):
            if exp_cols[col] != act_cols[col]:
                out.append(
                    f"column {name}.{col}: {_col(act_cols[col])} != expected {_col(exp_cols[col])}"
                )
        shared = [c for c in (c[0] for c in exp["columns"]) if c in act_cols]
        if [c for c in (c[0] for c in act["columns"]) if c in exp_cols] != shared:
            out.append(f"table {name}: column order differs")
        for kind in ("constraints", "indexes"):
            label = kind[:-1] if kind == "constraints" else "index"
            _diff_keys(out, f"{label} {name}:", exp[kind], act[kind], join=" ")
            for obj in sorted(set(exp[kind]) & set(act[kind])):
                if exp[kind][obj] != act[kind][obj]:
                    out.append(
                        f"{label} {name}:{obj}: {act[kind][obj]!r} != expected {exp[kind][obj]!r}"
                    )
    _diff_keys(out, "sequence", expected["sequences"], actual["sequences"])
    for name in sorted(set(expected["sequences"]) & set(actual["sequences"])):
        if expected["sequences"][name] != actual["sequences"][name]:
            out.append(f"sequence {name}: differs")
    return out


def _col(col: list[Any]) -> str:
    _, typ, not_null, default = col
    text = f"{typ}{' NOT NULL' if not_null else ''}"
    return text + (f" DEFAULT {default}" if default is not None else "")


def _diff_keys(
    out: list[str], label: str, expected: dict[str, Any], actual: dict[str, Any], join: str = " "
) -> None:
    for name in sorted(set(expected) - set(actual)):
        out.append(f"missing {label}{join}{name}")
    for name in sorted(set(actual) - set(expected)):
        out.append(f"unexpected {label}{join}{name}")


def expected(era: str) -> Catalog:
    """The catalog the package (and `wfctl bootstrap`) creates for an era, kept as data."""
    path = DATA_DIR / f"catalog_{era}.json"
    result: Catalog = json.loads(path.read_text(encoding="utf-8"))
    return result


def dump(catalog: Catalog) -> str:
    """Stable JSON text for a catalog (used to write the data files)."""
    return json.dumps(catalog, indent=1, sort_keys=True) + "\n"
