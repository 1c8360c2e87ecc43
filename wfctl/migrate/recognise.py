"""Recognise the statements of the package's slot-era migrations, and the locks they take.

wfctl never guesses what a migration does: each SQL statement of a pending migration is
normalised (comments, identifier quotes, case and spacing removed) and must match one of a
small set of known forms (reference §1.4, §1.6 rows 0018/0019 and the branch variants named
there). A known form carries its effect on the catalog and the lock it takes. A migration is
*recognised* when every statement is; `--swap` replaces only recognised migrations, because
it must reproduce their effect exactly before recording them as applied.

Effects:
- `hook_token_retention`: workflow_hooks.token_retention_until (0018);
- `key_index`: the unique index workflow_events_run_id_id_idx on (run_id, id);
- `drop_old_key` / `add_new_key`: the primary key swap from (id) to (run_id, id);
- `drop_run_id_index`: the redundant (run_id) index;
- `event_slots`: the marker table workflow_event_slots.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

HOOK_TOKEN_RETENTION = "hook_token_retention"
KEY_INDEX = "key_index"
DROP_OLD_KEY = "drop_old_key"
ADD_NEW_KEY = "add_new_key"
DROP_RUN_ID_INDEX = "drop_run_id_index"
EVENT_SLOTS = "event_slots"

# What a migration must do for wfctl to replace it with the online swap.
KEY_SWAP_EFFECTS = frozenset({DROP_OLD_KEY, ADD_NEW_KEY, DROP_RUN_ID_INDEX, EVENT_SLOTS})
REPLACEABLE_EFFECTS = KEY_SWAP_EFFECTS | {HOOK_TOKEN_RETENTION, KEY_INDEX}

# Lock levels, weakest first (PostgreSQL's table lock modes used here).
NONE = "none"
ROW_EXCLUSIVE = "ROW EXCLUSIVE"
SHARE_UPDATE_EXCLUSIVE = "SHARE UPDATE EXCLUSIVE"
SHARE = "SHARE"
ACCESS_EXCLUSIVE = "ACCESS EXCLUSIVE"
UNKNOWN = "unknown"
LOCK_ORDER = (NONE, ROW_EXCLUSIVE, SHARE_UPDATE_EXCLUSIVE, SHARE, ACCESS_EXCLUSIVE, UNKNOWN)
_STRENGTH = {lock: n for n, lock in enumerate(LOCK_ORDER)}

EVENTS = "workflow.workflow_events"
HOOKS = "workflow.workflow_hooks"


@dataclass(frozen=True)
class Form:
    """A known statement form: its pattern (on normalised text) and what it does."""

    kind: str
    pattern: re.Pattern[str]
    effects: frozenset[str]
    lock: str
    table: str | None
    builds_index: bool = False  # builds a full index over the table under `lock`
    if_exists: bool = False  # tolerates the object being already in its final state


def _form(
    kind: str,
    pattern: str,
    effects: Iterable[str],
    lock: str,
    table: str | None,
    *,
    builds_index: bool = False,
) -> Form:
    return Form(
        kind,
        re.compile(pattern),
        frozenset(effects),
        lock,
        table,
        builds_index=builds_index,
    )


_EV = r"workflow\.workflow_events"
_OPT_IE = r"(?: if exists)?"
_OPT_INE = r"(?: if not exists)?"
_BTREE = r"(?: using btree)?"

SIMPLE_FORMS: tuple[Form, ...] = (
    _form(
        "add_hook_token_retention",
        r"alter table workflow\.workflow_hooks add column"
        + _OPT_INE
        + r" token_retention_until (?:timestamptz|timestamp with time zone);",
        [HOOK_TOKEN_RETENTION],
        ACCESS_EXCLUSIVE,
        HOOKS,
    ),
    _form(
        "build_key_index",
        r"create unique index"
        + _OPT_INE
        + r" workflow_events_run_id_id_idx on "
        + _EV
        + _BTREE
        + r"\(run_id,id\);",
        [KEY_INDEX],
        SHARE,
        EVENTS,
        builds_index=True,
    ),
    _form(
        "drop_key_index",
        r"drop index" + _OPT_IE + r" workflow\.workflow_events_run_id_id_idx;",
        [],
        ACCESS_EXCLUSIVE,
        EVENTS,
    ),
    _form(
        "swap_key_using_index",
        r"alter table " + _EV + r" drop constraint" + _OPT_IE + r" workflow_events_pkey,"
        r"add constraint workflow_events_run_id_id_pk primary key using index"
        r" workflow_events_run_id_id_idx;",
        [DROP_OLD_KEY, ADD_NEW_KEY],
        ACCESS_EXCLUSIVE,
        EVENTS,
    ),
    _form(
        "swap_key_building",
        r"alter table " + _EV + r" drop constraint" + _OPT_IE + r" workflow_events_pkey,"
        r"add constraint workflow_events_run_id_id_pk primary key\(run_id,id\);",
        [DROP_OLD_KEY, ADD_NEW_KEY],
        ACCESS_EXCLUSIVE,
        EVENTS,
        builds_index=True,
    ),
    _form(
        "drop_old_key",
        r"alter table " + _EV + r" drop constraint" + _OPT_IE + r" workflow_events_pkey;",
        [DROP_OLD_KEY],
        ACCESS_EXCLUSIVE,
        EVENTS,
    ),
    _form(
        "add_key_using_index",
        r"alter table " + _EV + r" add constraint workflow_events_run_id_id_pk primary key"
        r" using index workflow_events_run_id_id_idx;",
        [ADD_NEW_KEY],
        ACCESS_EXCLUSIVE,
        EVENTS,
    ),
    _form(
        "add_key_building",
        r"alter table " + _EV + r" add constraint workflow_events_run_id_id_pk"
        r" primary key\(run_id,id\);",
        [ADD_NEW_KEY],
        ACCESS_EXCLUSIVE,
        EVENTS,
        builds_index=True,
    ),
    _form(
        "drop_run_id_index",
        r"drop index" + _OPT_IE + r" workflow\.workflow_events_run_id_index;",
        [DROP_RUN_ID_INDEX],
        ACCESS_EXCLUSIVE,
        EVENTS,
    ),
    _form(
        "create_event_slots",
        r"create table" + _OPT_INE + r" workflow\.workflow_event_slots\("
        r"(?:run_id varchar primary key not null|run_id varchar not null primary key"
        r"|run_id varchar not null,constraint workflow_event_slots_pkey primary key\(run_id\))"
        r"\);",
        [EVENT_SLOTS],
        NONE,
        None,
    ),
)

# DO blocks: `do $$ begin <body> end $$;` (any dollar tag).
_DO = re.compile(r"^do \$(\w*)\$ ?begin (.*)end;? ?\$\1\$;$")
# The shipped 0019's adopt-or-build block: if no valid index of that name, (re)build it.
_ADOPT = re.compile(r"^if not exists\((select [^;]*)\)then (.*)end if;$")
# The branch variant's guard: if the new key already exists, skip the whole block.
_GUARD = re.compile(r"^if exists\((select [^;]*)\)then return;end if;(.*)$")
# A condition may only read the catalog.
_NOT_A_READ = re.compile(
    r"\b(insert|update|delete|drop|alter|create|truncate|grant|revoke|perform|execute|call"
    r"|copy|into|lock|nextval|setval|pg_terminate_backend|pg_cancel_backend)\b"
)


@dataclass(frozen=True)
class Statement:
    """One SQL statement of a migration file, classified."""

    text: str  # as written (comments removed, trimmed)
    normal: str
    kind: str  # a Form kind, `adopt_key_index`, `guarded_key_swap`, or `unknown`
    effects: frozenset[str]
    lock: str
    table: str | None
    builds_index: bool = False
    note: str = ""

    @property
    def known(self) -> bool:
        """Effect known exactly (a form above), so wfctl could reproduce it."""
        return self.kind not in ("unknown", "other")

    @property
    def lock_known(self) -> bool:
        return self.lock != UNKNOWN

    def lock_text(self, size: str = "") -> str:
        """The lock this statement takes, in words; `size` describes the table built over."""
        if not self.lock_known:
            return "unknown (wfctl does not recognise this statement)"
        if self.lock == NONE:
            return "none on existing tables" + (f" ({self.note})" if self.note else "")
        size = f" over {size}" if size else ""
        what = f"{self.lock} on {self.table or 'its table'}"
        if self.kind == "other":
            blocks = {
                ACCESS_EXCLUSIVE: ": blocks all reads and writes",
                SHARE: f": blocks writes for a full index build{size}",
                SHARE_UPDATE_EXCLUSIVE: ": reads and writes continue",
                ROW_EXCLUSIVE: ": writes rows; readers and other writers continue",
            }.get(self.lock, "")
            return what + blocks + (f" ({self.note})" if self.note else "")
        if self.builds_index and self.lock == ACCESS_EXCLUSIVE:
            what += f": blocks all reads and writes for a full index build{size}"
        elif self.builds_index:
            what += f": blocks writes for a full index build{size}"
        elif self.lock == ACCESS_EXCLUSIVE:
            what += ": catalog only"
        return what + (f" ({self.note})" if self.note else "")


@dataclass
class Analysis:
    """What one migration file does, statement by statement."""

    tag: str
    statements: list[Statement] = field(default_factory=list)

    @property
    def recognised(self) -> bool:
        return bool(self.statements) and all(s.known for s in self.statements)

    @property
    def unknown(self) -> list[Statement]:
        return [s for s in self.statements if not s.known]

    @property
    def effects(self) -> frozenset[str]:
        out: set[str] = set()
        for s in self.statements:
            out |= s.effects
        return frozenset(out)

    @property
    def swaps_key(self) -> bool:
        return ADD_NEW_KEY in self.effects

    @property
    def adopts_prebuilt_index(self) -> bool:
        """True when a valid prebuilt workflow_events_run_id_id_idx becomes the key unbuilt."""
        kinds = {s.kind for s in self.statements}
        uses_index = bool(kinds & {"swap_key_using_index", "add_key_using_index"})
        builds = any(s.builds_index and s.kind != "adopt_key_index" for s in self.statements)
        return self.swaps_key and uses_index and not builds

    @property
    def strongest_lock(self) -> str:
        return max((s.lock for s in self.statements), key=_STRENGTH.__getitem__, default=NONE)


def split_statements(text: str) -> list[str]:
    """Split SQL text into statements on top-level `;`, dropping `--` and `/* */` comments.

    Quotes ('...', "...") and dollar-quoted bodies ($tag$...$tag$) are kept whole, so a DO
    block is one statement. Each statement keeps its terminating `;`.
    """
    out: list[str] = []
    buf: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            buf.append(" ")
            continue
        if ch in ("'", '"'):
            end = i + 1
            while end < n:
                if text[end] == ch:
                    if end + 1 < n and text[end + 1] == ch:
                        end += 2
                        continue
                    break
                end += 1
            buf.append(text[i : end + 1])
            i = end + 1
            continue
        if ch == "$":
            m = re.match(r"\$(\w*)\$", text[i:])
            if m and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
                tag = m.group(0)
                end = text.find(tag, i + len(tag))
                end = n if end < 0 else end + len(tag)
                buf.append(_strip_comments(text[i:end]))
                i = end
                continue
        if ch == ";":
            buf.append(";")
            stmt = "".join(buf).strip()
            if stmt != ";":
                out.append(stmt)
            buf = []
            i += 1
            continue
        buf.append(ch)
        i += 1
    rest = "".join(buf).strip()
    if rest:
        out.append(rest + ";")
    return out


def _strip_comments(body: str) -> str:
    """Remove `--` line comments inside a dollar-quoted body (outside its string literals)."""
    out: list[str] = []
    in_str = False
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "'":
            in_str = not in_str
        elif not in_str and body.startswith("--", i):
            end = body.find("\n", i)
            i = len(body) if end < 0 else end
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def normalise(statement: str) -> str:
    """Lower case, no identifier quotes, single spaces, none around `( ) , ; =`."""
    text = statement.replace('"', "").lower()
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*([(),;=])\s*", r"\1", text)


def classify(statement: str) -> Statement:
    """Classify one statement (as split by `split_statements`)."""
    normal = normalise(statement)
    for form in SIMPLE_FORMS:
        if form.pattern.fullmatch(normal):
            return Statement(
                statement,
                normal,
                form.kind,
                form.effects,
                form.lock,
                form.table,
                builds_index=form.builds_index,
            )
    do = _DO.match(normal)
    if do:
        body = do.group(2)
        adopt = _ADOPT.match(body)
        if adopt:
            return _classify_adopt(statement, normal, adopt.group(1), adopt.group(2))
        guard = _GUARD.match(body)
        if guard:
            return _classify_guard(statement, normal, guard.group(1), guard.group(2))
    return _generic(statement, normal)


# Generic statements: the lock is PostgreSQL's documented one for the command; the effect is
# not claimed (kind `other`), so such a migration is reported but never replaced.
_TABLE = r"(?P<table>[a-z_][a-z0-9_$]*\.[a-z_][a-z0-9_$]*|[a-z_][a-z0-9_$]*)"
_GENERIC: tuple[tuple[re.Pattern[str], str, bool, str], ...] = (
    (
        re.compile(r"^create (?:unique )?index concurrently .* on (?:only )?" + _TABLE + r"\b"),
        SHARE_UPDATE_EXCLUSIVE,
        False,
        "fails inside the migrator's transaction: CONCURRENTLY cannot run in one",
    ),
    (
        re.compile(r"^create (?:unique )?index .* on (?:only )?" + _TABLE + r"\b"),
        SHARE,
        True,
        "",
    ),
    (
        re.compile(
            r"^alter table (?:if exists )?(?:only )?" + _TABLE + r" add column\b"
            r"(?!.*\b(?:serial|bigserial|smallserial|generated|volatile)\b)"
        ),
        ACCESS_EXCLUSIVE,
        False,
        "a new column without a volatile default: catalog only",
    ),
    (
        re.compile(r"^alter table (?:if exists )?(?:only )?" + _TABLE + r" "),
        ACCESS_EXCLUSIVE,
        True,
        "may rewrite or scan the whole table under the lock",
    ),
    (re.compile(r"^create table "), NONE, False, "creates a new table"),
    (re.compile(r"^(?:update|delete from|insert into) " + _TABLE), ROW_EXCLUSIVE, False, ""),
)


def _generic(statement: str, normal: str) -> Statement:
    for pattern, lock, heavy, note in _GENERIC:
        m = pattern.match(normal)
        if m:
            table = m.groupdict().get("table")
            if table and "." not in table:
                table = f"public.{table}"
            return Statement(
                statement,
                normal,
                "other",
                frozenset(),
                lock,
                table,
                builds_index=heavy,
                note=note,
            )
    return _unknown(statement, normal)


def _unknown(statement: str, normal: str) -> Statement:
    return Statement(statement, normal, "unknown", frozenset(), UNKNOWN, None)


def _reads_only(condition: str, *must_mention: str) -> bool:
    return not _NOT_A_READ.search(condition) and all(w in condition for w in must_mention)


def _inner(body: str) -> list[Statement]:
    parts = [p + ";" for p in body.split(";") if p.strip()]
    return [classify(p) for p in parts]


def _classify_adopt(statement: str, normal: str, condition: str, body: str) -> Statement:
    """`IF NOT EXISTS (valid index) THEN [DROP INDEX IF EXISTS ..;] CREATE UNIQUE INDEX ..`."""
    if not _reads_only(condition, "workflow_events_run_id_id_idx", "indisvalid"):
        return _unknown(statement, normal)
    inner = _inner(body)
    kinds = [s.kind for s in inner]
    if kinds not in (["build_key_index"], ["drop_key_index", "build_key_index"]):
        return _unknown(statement, normal)
    return Statement(
        statement,
        normal,
        "adopt_key_index",
        frozenset({KEY_INDEX}),
        SHARE,
        EVENTS,
        builds_index=True,
        note="only when no valid workflow_events_run_id_id_idx exists; otherwise adopted as is",
    )


def _classify_guard(statement: str, normal: str, condition: str, body: str) -> Statement:
    """`IF EXISTS (new key) THEN RETURN; END IF; <known statements>`: skipped once swapped."""
    if not _reads_only(condition, "workflow_events_run_id_id_pk"):
        return _unknown(statement, normal)
    inner = _inner(body)
    if not inner or not all(s.known for s in inner) or not any(s.effects for s in inner):
        return _unknown(statement, normal)
    effects: set[str] = set()
    for s in inner:
        effects |= s.effects
    lock = max((s.lock for s in inner), key=_STRENGTH.__getitem__)
    tables = {s.table for s in inner if s.table}
    return Statement(
        statement,
        normal,
        "guarded_key_swap",
        frozenset(effects),
        lock,
        tables.pop() if len(tables) == 1 else None,
        builds_index=any(s.builds_index for s in inner),
        note="skipped when workflow_events_run_id_id_pk already exists",
    )


def analyse(tag: str, chunks: Iterable[str]) -> Analysis:
    """Classify every statement of a migration (its drizzle chunks, split further on `;`)."""
    analysis = Analysis(tag)
    for chunk in chunks:
        analysis.statements.extend(classify(s) for s in split_statements(chunk))
    return analysis
