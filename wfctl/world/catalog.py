"""A normalised description of a world's catalog, read from pg_catalog, and a diff of two.

Compared: enums (labels in order), tables, columns (position, type, nullability, default),
constraints, indexes (full definition incl. partial predicates) and sequences. Not compared:
owners, grants, OIDs, dropped-column history. The shape is plain JSON so an expected catalog
can be kept as data (`wfctl/data/catalog_<era>.json`) and checked against the real package.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql as pgsql
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


@dataclass(frozen=True)
class Difference:
    """One way a live catalog differs from the expected one.

    `change` is `missing` (expected, absent), `unexpected` (present, not expected),
    `changed`, or `order` (the same columns in another order: what ADD COLUMN leaves when
    migrations ran out of journal order; the package names every column, so it reads alike);
    `kind` is enum/table/column/constraint/index/sequence; `name` is qualified
    (`workflow.workflow_hooks.claimed_from`, `workflow.workflow_events:<index>`). `known` names
    the upstream migration whose effect this is (see `wfctl.world.newer`), else "".
    """

    change: str
    kind: str
    name: str
    text: str
    known: str = ""
    # For a changed column: [name, type, not_null, default] as found and as expected.
    have: tuple[Any, ...] | None = None
    want: tuple[Any, ...] | None = None


# Decides whether two differently printed index definitions on one table mean the same:
# (schema.table, expected definition, actual definition) -> same meaning?
SameIndex = Callable[[str, str, str], bool]


def diff(expected: Catalog, actual: Catalog, same_index: SameIndex | None = None) -> list[str]:
    """Human-readable differences, one line each; empty when the catalogs are identical."""
    return [d.text for d in differences(expected, actual, same_index)]


def differences(
    expected: Catalog, actual: Catalog, same_index: SameIndex | None = None
) -> list[Difference]:
    """Every difference, structured; index definitions that differ only in how the server
    printed them are equal when `same_index` (see `server_equivalence`) says so."""
    out: list[Difference] = []
    _diff_keys(out, "enum", "enum", expected["enums"], actual["enums"])
    for name in sorted(set(expected["enums"]) & set(actual["enums"])):
        if expected["enums"][name] != actual["enums"][name]:
            out.append(
                Difference(
                    "changed",
                    "enum",
                    name,
                    f"enum {name}: labels {actual['enums'][name]} "
                    f"!= expected {expected['enums'][name]}",
                )
            )
    _diff_keys(out, "table", "table", expected["tables"], actual["tables"])
    for name in sorted(set(expected["tables"]) & set(actual["tables"])):
        exp, act = expected["tables"][name], actual["tables"][name]
        exp_cols = {c[0]: c for c in exp["columns"]}
        act_cols = {c[0]: c for c in act["columns"]}
        _diff_keys(out, "column", f"column {name}.", exp_cols, act_cols, join="", scope=name)
        for col in sorted(set(exp_cols) & set(act_cols)):
            if exp_cols[col] != act_cols[col]:
                have, want = _col(act_cols[col]), _col(exp_cols[col])
                text = f"column {name}.{col}: {have} != expected {want}"
                out.append(
                    Difference(
                        "changed",
                        "column",
                        f"{name}.{col}",
                        text,
                        have=tuple(act_cols[col]),
                        want=tuple(exp_cols[col]),
                    )
                )
        shared = [c for c in (c[0] for c in exp["columns"]) if c in act_cols]
        if [c for c in (c[0] for c in act["columns"]) if c in exp_cols] != shared:
            out.append(Difference("order", "table", name, f"table {name}: column order differs"))
        for kind in ("constraints", "indexes"):
            label = kind[:-1] if kind == "constraints" else "index"
            _diff_keys(out, label, f"{label} {name}:", exp[kind], act[kind], join=" ", scope=name)
            for obj in sorted(set(exp[kind]) & set(act[kind])):
                want, have = exp[kind][obj], act[kind][obj]
                if want == have or (
                    kind == "indexes" and same_index is not None and same_index(name, want, have)
                ):
                    continue
                text = f"{label} {name}:{obj}: {have!r} != expected {want!r}"
                out.append(Difference("changed", label, f"{name}:{obj}", text))
    _diff_keys(out, "sequence", "sequence", expected["sequences"], actual["sequences"])
    for name in sorted(set(expected["sequences"]) & set(actual["sequences"])):
        if expected["sequences"][name] != actual["sequences"][name]:
            out.append(Difference("changed", "sequence", name, f"sequence {name}: differs"))
    return out


def compare(conn: psycopg.Connection[Any], want: str | Catalog) -> list[Difference]:
    """The live catalog against `want` (a catalog, or an era's kept data file), by meaning:
    what the server prints differently but means the same is equal, and what later upstream
    migrations add is labelled `known`."""
    from wfctl.world import newer  # data about upstream releases, kept beside the catalog

    wanted = expected(want) if isinstance(want, str) else want
    found = differences(wanted, describe(conn), server_equivalence(conn))
    return [newer.classify(d) for d in found]


def server_equivalence(conn: psycopg.Connection[Any]) -> SameIndex:
    """Index definitions compared by meaning, on the server that holds them.

    Why: PostgreSQL prints an expression back the way it stored the parse tree, and the tree
    depends on how the SQL was written. The package's migration writes `type IN ('a', ...)`
    on a varchar column, stored as a cast of a varchar ARRAY to text[]; pg_dump prints that
    as `ANY ((ARRAY['a'::character varying, ...])::text[])`, and restoring that text parses
    it into an ARRAY of per-element casts, printed `ANY (ARRAY[('a'::character varying)::text,
    ...])` (seen on 14-18). Same index, different text: a text comparison calls every
    restored world drifted.

    How: the parts outside the predicate (name, uniqueness, method, columns) must match as
    text; the two predicates are each planned by the server as a select-list expression on
    the index's own table with `EXPLAIN (VERBOSE)`, and compared as the planner prints them.
    The planner folds constant casts and constant ARRAYs into one constant (both forms above
    become `'{a,...}'::text[]`), so equal meanings print equally, by PostgreSQL's own rules
    rather than by a normaliser of ours that would need to know every major's printing.
    EXPLAIN without ANALYZE executes nothing and is allowed in a READ ONLY transaction and on a
    standby, which is where doctor runs; building the expected index in a scratch table would
    need a writable primary. Each probe runs in a savepoint: an expected predicate naming a
    column the live table lacks simply compares unequal. An INVALID index never compares
    equal (it is reported as such).
    """

    def same(table: str, want: str, have: str) -> bool:
        want_head, want_pred = _split_predicate(want)
        have_head, have_pred = _split_predicate(have)
        if want_head != have_head or want_pred is None or have_pred is None:
            return False
        if have.endswith(INVALID_MARK) or want.endswith(INVALID_MARK):
            return False
        try:
            with conn.transaction():
                return _planned(conn, table, want_pred) == _planned(conn, table, have_pred)
        except psycopg.Error:
            return False

    return same


INVALID_MARK = " [INVALID]"


def _split_predicate(definition: str) -> tuple[str, str | None]:
    """`CREATE ... (cols) WHERE (pred)` -> (head, pred); pg_get_indexdef puts WHERE last."""
    head, sep, pred = definition.partition(" WHERE ")
    return (head, pred) if sep else (definition, None)


def _planned(conn: psycopg.Connection[Any], table: str, predicate: str) -> str:
    schema, _, name = table.partition(".")
    query = pgsql.SQL(sql.load("world/planned_expression")).format(
        expression=pgsql.SQL(predicate),  # server-printed SQL, not user input
        table=pgsql.Identifier(schema, name),
    )
    lines = [row[0] for row in conn.execute(query).fetchall()]
    outputs = [line.strip() for line in lines if line.strip().startswith("Output:")]
    return outputs[0] if outputs else "\n".join(lines)


def _col(col: list[Any]) -> str:
    _, typ, not_null, default = col
    text = f"{typ}{' NOT NULL' if not_null else ''}"
    return text + (f" DEFAULT {default}" if default is not None else "")


def _diff_keys(
    out: list[Difference],
    kind: str,
    label: str,
    expected: dict[str, Any],
    actual: dict[str, Any],
    join: str = " ",
    scope: str = "",
) -> None:
    sep = ":" if kind in ("constraint", "index") else "."
    for change, names in (
        ("missing", sorted(set(expected) - set(actual))),
        ("unexpected", sorted(set(actual) - set(expected))),
    ):
        for name in names:
            qualified = f"{scope}{sep}{name}" if scope else name
            out.append(Difference(change, kind, qualified, f"{change} {label}{join}{name}"))


def expected(era: str) -> Catalog:
    """The catalog `wfctl bootstrap` creates for an era (`beta29`, `slot`), kept as data; any
    release's catalog is composed from its migrations (wfctl.world.drizzle.compose), and a
    test proves the two agree for beta.29."""
    if era not in ("beta29", "slot"):
        from wfctl.world import releases  # a release line's catalog, from its journal

        composed: Catalog = releases.line(era).expected_catalog
        return composed
    path = DATA_DIR / f"catalog_{era}.json"
    result: Catalog = json.loads(path.read_text(encoding="utf-8"))
    return result


def dump(catalog: Catalog) -> str:
    """Stable JSON text for a catalog (used to write the data files)."""
    return json.dumps(catalog, indent=1, sort_keys=True) + "\n"


# The delta format: {"enums": {name: labels | None}, "sequences": {name: spec | None},
# "tables": {name: None (dropped) | {"add": entry} | {"columns": [[name, col | None], ...],
# "constraints": {name: def | None}, "indexes": {name: def | None}}}}. None removes.


def delta(before: Catalog, after: Catalog) -> dict[str, Any]:
    """What turned `before` into `after` (used by the generator)."""
    out: dict[str, Any] = {}
    for kind in ("enums", "sequences"):
        changed = _keyed(before[kind], after[kind])
        if changed:
            out[kind] = changed
    tables: dict[str, Any] = {}
    for name in sorted(set(before["tables"]) | set(after["tables"])):
        old, new = before["tables"].get(name), after["tables"].get(name)
        if old == new:
            continue
        if new is None or old is None:
            tables[name] = None if new is None else {"add": new}
            continue
        change: dict[str, Any] = {}
        old_cols = {c[0]: c for c in old["columns"]}
        new_cols = {c[0]: c for c in new["columns"]}
        cols = [[n, None] for n in old_cols if n not in new_cols]
        cols += [[c[0], c] for c in new["columns"] if old_cols.get(c[0]) != c]
        if cols:
            change["columns"] = cols
        for kind in ("constraints", "indexes"):
            keyed = _keyed(old[kind], new[kind])
            if keyed:
                change[kind] = keyed
        tables[name] = change
    if tables:
        out["tables"] = tables
    return out


def apply_delta(catalog: Catalog, change: dict[str, Any]) -> None:
    """Apply one delta to `catalog` in place (added columns go last, as ALTER TABLE does)."""
    for kind in ("enums", "sequences"):
        _apply_keyed(catalog[kind], change.get(kind, {}))
    for name, table in change.get("tables", {}).items():
        if table is None:
            catalog["tables"].pop(name, None)
            continue
        if "add" in table:
            catalog["tables"][name] = copy.deepcopy(table["add"])
            continue
        entry = catalog["tables"][name]
        for col_name, col in table.get("columns", []):
            at = next((i for i, c in enumerate(entry["columns"]) if c[0] == col_name), None)
            if col is None:
                if at is not None:
                    del entry["columns"][at]
            elif at is None:
                entry["columns"].append(list(col))
            else:
                entry["columns"][at] = list(col)
        for kind in ("constraints", "indexes"):
            _apply_keyed(entry[kind], table.get(kind, {}))


def describe_delta(change: dict[str, Any]) -> list[str]:
    """A delta in words, for docs and `info`."""
    out: list[str] = []
    enums = change.get("enums", {})
    moved = sorted(n for n, v in enums.items() if v is None)
    added = sorted(n for n, v in enums.items() if v is not None)
    if moved and added:
        out.append(
            f"enums {', '.join(n.partition('.')[2] for n in moved)}: "
            f"{moved[0].partition('.')[0]} -> {added[0].partition('.')[0]}"
        )
    else:
        out += [f"enum {n}" for n in added] + [f"drops enum {n}" for n in moved]
    for name, table in sorted(change.get("tables", {}).items()):
        short = name.partition(".")[2]
        if table is None:
            out.append(f"drops table {short}")
            continue
        if "add" in table:
            out.append(f"table {short}")
            continue
        for col, spec in table.get("columns", []):
            out.append(f"{'column' if spec else 'drops column'} {short}.{col}")
        for kind, word in (("constraints", "constraint"), ("indexes", "index")):
            for obj, spec in sorted(table.get(kind, {}).items()):
                out.append(f"{word if spec else 'drops ' + word} {obj}")
    for name, spec in sorted(change.get("sequences", {}).items()):
        out.append(f"{'sequence' if spec else 'drops sequence'} {name}")
    return out


def _keyed(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: None for k in old if k not in new}
    out.update({k: v for k, v in new.items() if old.get(k) != v})
    return out


def _apply_keyed(target: dict[str, Any], change: dict[str, Any]) -> None:
    for key, value in change.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = copy.deepcopy(value)
