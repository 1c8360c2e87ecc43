"""Renderings of a doctor report: table, plain/markdown, json, jsonl, prometheus, nagios.

Prometheus output follows the text exposition format for node_exporter's textfile collector
(written atomically by the command with --output); nagios is the one-line plugin format
`STATUS - summary | perfdata`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

from wfctl.clock import timestamp
from wfctl.doctor.base import CheckResult, Status
from wfctl.doctor.runner import Report
from wfctl.durations import format_duration

HEADERS = ("code", "status", "count", "in flight", "check", "sample runs")


def rows(report: Report) -> list[tuple[str, ...]]:
    """One row per check for the table formats; remedies follow the table."""
    out: list[tuple[str, ...]] = []
    for r in report.results:
        runs = sorted({f.run_id for f in r.samples if f.run_id})
        out.append(
            (
                r.check.code,
                r.status.value,
                str(r.count),
                str(r.in_flight),
                f"{r.check.title} ({r.message})" if r.message else r.check.title,
                ", ".join(runs[:2]) + (" ..." if len(runs) > 2 else ""),
            )
        )
    return out


def details(report: Report) -> Iterator[str]:
    """For each check with findings: its remedy, then its samples, one line each."""
    for r in report.results:
        if not (r.count or r.in_flight):
            continue
        yield f"{r.check.code} {r.status.value}: {r.check.remedy}"
        for f in r.samples:
            state = "in flight" if f.in_flight else (f.severity or r.check.severity).value
            yield f"  [{state}] run {f.run_id or '-'} {f.entity_id or ''}: {f.detail}"


def plural(count: int, noun: str) -> str:
    """`1 check`, `15 checks`, `0 findings`: English, not `finding(s)`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def summary_line(report: Report) -> str:
    """`CRITICAL: 15 checks, 3 findings (1 in flight, ...); slot world 'app', 0.12 s`."""
    findings = sum(r.count for r in report.results)
    text = (
        f"{report.status.value.upper()}: {plural(len(report.results), 'check')}, "
        f"{plural(findings, 'finding')}"
    )
    in_flight = sum(r.in_flight for r in report.results)
    if in_flight:
        text += f" ({in_flight} in flight, younger than {format_duration(report.options.min_age)})"
    unknown = [r.check.code for r in report.results if r.status is Status.UNKNOWN]
    if unknown:
        text += f"; could not run: {', '.join(unknown)}"
    release = report.world.release
    era = release.label if release else report.world.era
    return f"{text}; {era} world {report.world.database!r}, {report.seconds:.2f} s"


def jsonl(report: Report, dsn: str = "") -> Iterator[str]:
    """One finding per line (the kept samples; --limit bounds them), then one summary line,
    so a healthy world still prints a line. Each line names the database (its name and the
    masked DSN) and the time of the pass, so lines shipped to a log store stand alone."""
    where = {
        "database": report.world.database,
        "dsn": dsn,
        "at": timestamp(report.started_at),
    }
    for result in report.results:
        for finding in result.samples:
            yield json.dumps(
                {
                    "kind": "finding",
                    **finding.as_dict(),
                    "severity": (finding.severity or result.check.severity).value,
                    **where,
                },
                default=str,
            )
    yield json.dumps(
        {
            "kind": "summary",
            "status": report.status.value,
            "exit_code": int(report.exit_status),
            "checks": len(report.results),
            "findings": sum(r.count for r in report.results),
            "in_flight": sum(r.in_flight for r in report.results),
            "unknown": [r.check.code for r in report.results if r.status is Status.UNKNOWN],
            **where,
        },
        default=str,
    )


def jsonl_failure(reason: str, exit_code: int, dsn: str) -> str:
    """The one line of a pass that could not run."""
    line = {
        "kind": "summary",
        "status": "unknown",
        "exit_code": exit_code,
        "error": reason,
        "database": None,
        "dsn": dsn,
        "at": timestamp(datetime.now(UTC)),
    }
    return json.dumps(line) + "\n"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


STRANDED = "WF133"


def _stranded_age(report: Report) -> list[str]:
    """Age of the oldest stranded run (WF133: live, and nothing will ever wake it), from its
    run row's updated_at, a JS-written UTC wall-clock column (0 when there is none). A count
    says how many; this says how long the oldest customer has waited, which is what to page on.
    Absent when WF133 did not run (not selected, no queue, or it failed)."""
    result = next((r for r in report.results if r.check.code == STRANDED), None)
    if result is None or result.status in (Status.UNKNOWN, Status.NOT_APPLICABLE):
        return []
    age = 0.0
    if result.oldest_observed is not None:
        seen = result.oldest_observed
        seen = seen if seen.tzinfo else seen.replace(tzinfo=UTC)
        age = max(0.0, (report.started_at - seen).total_seconds())
    return [
        "# HELP wfctl_doctor_oldest_stranded_run_age_seconds Seconds since the oldest stranded"
        " run (WF133) last changed; 0 when none.",
        "# TYPE wfctl_doctor_oldest_stranded_run_age_seconds gauge",
        f"wfctl_doctor_oldest_stranded_run_age_seconds {age:.3f}",
    ]


def prometheus(report: Report) -> str:
    """Text exposition format: per-check gauges plus run metadata."""
    lines = [
        "# HELP wfctl_doctor_findings Findings older than --min-age, by check.",
        "# TYPE wfctl_doctor_findings gauge",
    ]
    for r in report.results:
        lines.append(
            f'wfctl_doctor_findings{{code="{r.check.code}",severity="{r.check.severity.value}"}} '
            f"{r.count}"
        )
    lines += [
        "# HELP wfctl_doctor_in_flight Findings younger than --min-age, by check.",
        "# TYPE wfctl_doctor_in_flight gauge",
    ]
    lines += [
        f'wfctl_doctor_in_flight{{code="{r.check.code}"}} {r.in_flight}' for r in report.results
    ]
    lines += [
        "# HELP wfctl_doctor_check_status 1 for the check's current status.",
        "# TYPE wfctl_doctor_check_status gauge",
    ]
    for r in report.results:
        for status in Status:
            value = 1 if r.status is status else 0
            labels = f'code="{r.check.code}",status="{status.value}"'
            lines.append(f"wfctl_doctor_check_status{{{labels}}} {value}")
    lines += _stranded_age(report)
    lines += _up(1)
    lines += [
        "# HELP wfctl_doctor_exit_code The exit code doctor returned (0 ok .. 3 unknown).",
        "# TYPE wfctl_doctor_exit_code gauge",
        f"wfctl_doctor_exit_code {int(report.exit_status)}",
        "# HELP wfctl_doctor_duration_seconds Wall time of the whole diagnosis.",
        "# TYPE wfctl_doctor_duration_seconds gauge",
        f"wfctl_doctor_duration_seconds {report.seconds:.6f}",
        "# HELP wfctl_doctor_last_run_timestamp_seconds When this report was made.",
        "# TYPE wfctl_doctor_last_run_timestamp_seconds gauge",
        f"wfctl_doctor_last_run_timestamp_seconds {report.started_at.timestamp():.3f}",
        "# HELP wfctl_doctor_info Which world was inspected.",
        "# TYPE wfctl_doctor_info gauge",
        f'wfctl_doctor_info{{database="{_label(report.world.database)}",'
        f'era="{_label(report.world.era)}"}} 1',
    ]
    return "\n".join(lines) + "\n"


def _up(value: int) -> list[str]:
    return [
        "# HELP wfctl_doctor_up 1 when doctor ran, 0 when it could not (wfctl_doctor_exit_code"
        " says why: 3).",
        "# TYPE wfctl_doctor_up gauge",
        f"wfctl_doctor_up {value}",
    ]


def prometheus_failure(reason: str, exit_code: int, dsn: str) -> str:
    """The textfile of a pass that could not run: up 0 and the exit code, so an alert on
    `wfctl_doctor_exit_code >= 2` or `wfctl_doctor_up == 0` fires (a stale file would keep
    the last verdict alive), and the reason as a label of wfctl_doctor_error."""
    now = datetime.now(UTC).timestamp()
    lines = [
        *_up(0),
        "# HELP wfctl_doctor_exit_code The exit code doctor returned (0 ok .. 3 unknown).",
        "# TYPE wfctl_doctor_exit_code gauge",
        f"wfctl_doctor_exit_code {exit_code}",
        "# HELP wfctl_doctor_last_run_timestamp_seconds When this report was made.",
        "# TYPE wfctl_doctor_last_run_timestamp_seconds gauge",
        f"wfctl_doctor_last_run_timestamp_seconds {now:.3f}",
        "# HELP wfctl_doctor_error Why doctor could not run (1, the reason as a label).",
        "# TYPE wfctl_doctor_error gauge",
        f'wfctl_doctor_error{{reason="{_label(reason[:300])}",dsn="{_label(dsn)}"}} 1',
    ]
    return "\n".join(lines) + "\n"


def nagios_failure(reason: str) -> str:
    """The plugin line of a pass that could not run (Nagios shows "(null)" for no output)."""
    return f"WFCTL UNKNOWN - {' '.join(reason.replace('|', '/').split())}"


def nagios(report: Report) -> str:
    """One status line: `WFCTL CRITICAL - WF101=2 WF112=1 | WF101=2;;; ...`."""
    bad = [r for r in report.results if r.count or r.status is Status.UNKNOWN]
    parts = [
        f"{r.check.code}={r.count}" if r.status is not Status.UNKNOWN else f"{r.check.code}=UNKNOWN"
        for r in bad
    ]
    body = " ".join(parts) if parts else "no findings"
    perf = " ".join(f"{r.check.code}={r.count};;;0" for r in report.results if _counted(r))
    return f"WFCTL {report.status.value.upper()} - {body} | {perf}".rstrip(" |")


def _counted(result: CheckResult) -> bool:
    return result.status not in (Status.UNKNOWN, Status.NOT_APPLICABLE)


QUIET = (Status.OK, Status.NOT_APPLICABLE)


def compact(report: Report, width: int, problems_only: bool = False) -> Iterator[str]:
    """The text view: one line per check that found something, could not run or is info,
    then the quiet ones collapsed into a line per status (ok, not applicable: the codes and
    why), then the remedies and samples. Fits `width` (lines wrap at spaces, ids whole);
    `problems_only` drops the quiet lines (`doctor --problems`)."""
    import textwrap

    loud = [r for r in report.results if r.status not in QUIET or r.count or r.in_flight]
    for r in loud:
        found = plural(r.count, "finding")
        if r.in_flight:
            found += f", {r.in_flight} in flight"
        title = f"{r.check.title} ({r.message})" if r.message else r.check.title
        head = f"{r.check.code:<6} {r.status.value:<8} {found:<24} "
        yield from textwrap.wrap(
            head + title, width=width, subsequent_indent=" " * len(head), break_on_hyphens=False
        ) or [head]
    for status in QUIET:
        same = [r for r in report.results if r.status is status and r not in loud]
        if not same or problems_only:
            continue
        by_reason: dict[str, list[str]] = {}
        for r in same:
            by_reason.setdefault(r.message or "", []).append(r.check.code)
        parts = [" ".join(codes) + (f" ({why})" if why else "") for why, codes in by_reason.items()]
        text = f"{status.value.replace('_', ' ')} ({len(same)}): " + "; ".join(parts)
        yield from textwrap.wrap(text, width=width, subsequent_indent="  ", break_on_hyphens=False)
    quiet = len(report.results) - len(loud)
    if problems_only and quiet:
        yield f"({plural(quiet, 'more check')}: ok or not applicable)"
    for line in details(report):  # ids stay whole: only spaces break a line
        indent = "      " if line.startswith("  ") else "  "
        yield from textwrap.wrap(
            line, width=width, subsequent_indent=indent, break_long_words=False,
            break_on_hyphens=False, drop_whitespace=True,
        ) or [line]  # fmt: skip
