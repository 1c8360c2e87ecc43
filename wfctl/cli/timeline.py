"""A run's timeline from its event log, and its drawing for the terminal (`wfctl runs show`).

Pure: `build(events, now)` turns the log (runtime/engine.Event, payloads decoded) into lanes
of segments on a time axis: a step's attempts and the back-off between them, sleeps, hook
waits with the payloads' arrivals, child runs from their start to their end; `render` draws
them as lines of text. The JSON form of `wfctl --format json runs show` is `build`'s result
(docs/cli.md, "The run's timeline"). No I/O, no database, no rich: the command reads the log
(sql/runtime/read_events.sql) and prints the lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from wfctl.clock import timestamp
from wfctl.runtime import serde
from wfctl.runtime.engine import CHILD_STEP, Event, short_name

CHILD_TOKEN = "wfctl:child:"  # children.py: the parent's hook that receives a child's end
ENDS = {"run_completed": "completed", "run_failed": "failed", "run_cancelled": "cancelled"}


@dataclass
class _Segment:
    kind: str  # attempt | backoff | sleep | hook | child
    start: datetime
    end: datetime | None = None
    attempt: int | None = None
    outcome: str | None = None  # attempt: completed | failed | retried | interrupted | running
    error: str | None = None

    def as_dict(self, origin: datetime) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "start": timestamp(self.start),
            "end": timestamp(self.end),
            "start_ms": _ms(self.start - origin),
            "end_ms": None if self.end is None else _ms(self.end - origin),
        }
        if self.attempt is not None:
            out["attempt"] = self.attempt
        if self.outcome is not None:
            out["outcome"] = self.outcome
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass
class _Lane:
    kind: str  # step | sleep | hook | child
    id: str
    name: str
    status: str = "running"
    segments: list[_Segment] = field(default_factory=list)
    marks: list[datetime] = field(default_factory=list)  # hook: payloads received
    child_run_id: str | None = None
    backoff_until: datetime | None = None  # step: the open back-off's retryAfter

    def open(self) -> _Segment | None:
        last = self.segments[-1] if self.segments else None
        return last if last is not None and last.end is None else None


def _ms(delta: timedelta) -> float:
    return round(delta.total_seconds() * 1000, 3)


def _value(raw: Any) -> Any:
    if isinstance(raw, bytes | bytearray):
        try:
            return serde.loads(bytes(raw))
        except (ValueError, UnicodeDecodeError):
            return None
    return raw


def _error(data: dict[str, Any]) -> str | None:
    value = _value(data.get("error"))
    if value is None:
        return None
    return serde.error_message(value).splitlines()[0][:200] if value != "" else None


def build(events: list[Event], now: datetime) -> dict[str, Any]:
    """The run's timeline: {start, end, ongoing, duration_ms, status, lanes: [...]} (each
    lane {kind, id, name, status, segments, marks[, child_run_id]}); times are timestamps
    and milliseconds from the run's creation. An active run's open segments end at `now`
    in the drawing and have `end: null` here."""
    lanes: dict[str, _Lane] = {}
    hooks_by_token: dict[str, _Lane] = {}
    start = events[0].created_at if events else now
    end: datetime | None = None
    status = "pending"
    for event in events:
        data = event.data if isinstance(event.data, dict) else {}
        at = event.created_at
        corr = event.correlation_id or ""
        kind = event.type
        if kind == "run_started":
            status = "running"
        elif kind in ENDS:
            status, end = ENDS[kind], at
        elif kind in ("step_created", "step_started") and corr not in lanes:
            name = str(data.get("stepName") or "?")
            lane = _Lane("step", corr, short_name(name))
            if name == CHILD_STEP:
                record = _value(data.get("input"))
                workflow = record.get("workflow") if isinstance(record, dict) else None
                lane = _Lane("child", corr, short_name(str(workflow or "?")))
                lane.segments.append(_Segment("child", at))
            lanes[corr] = lane
        if kind == "step_started" and lanes[corr].kind == "step":
            _start_attempt(lanes[corr], at, data)
        elif kind == "step_retrying" and corr in lanes:
            lane = lanes[corr]
            attempt = lane.open()
            if attempt is not None and attempt.kind == "attempt":
                attempt.end, attempt.outcome, attempt.error = at, "retried", _error(data)
            after = data.get("retryAfter")
            lane.segments.append(_Segment("backoff", at))
            lane.backoff_until = after if isinstance(after, datetime) else None
            lane.status = "retrying"
        elif kind in ("step_completed", "step_failed") and corr in lanes:
            lane = lanes[corr]
            outcome = "completed" if kind == "step_completed" else "failed"
            lane.status = outcome
            if lane.kind == "child":
                child = _value(data.get("result"))
                lane.child_run_id = child if isinstance(child, str) else None
                lane.status = "running"
                continue
            attempt = lane.open()
            if attempt is not None:
                attempt.end, attempt.outcome = at, outcome
                if outcome == "failed":
                    attempt.error = _error(data)
        elif kind == "wait_created":
            lane = _Lane("sleep", corr, "")
            resume = data.get("resumeAt")
            if isinstance(resume, datetime):
                lane.name = duration(_ms(resume - at))
            lane.segments.append(_Segment("sleep", at))
            lane.status = "sleeping"
            lanes[corr] = lane
        elif kind == "wait_completed" and corr in lanes:
            lane = lanes[corr]
            segment = lane.open()
            if segment is not None:
                segment.end = at
            lane.status = "done"
        elif kind in ("hook_created", "hook_conflict"):
            token = str(data.get("token") or "")
            if token.startswith(CHILD_TOKEN):
                hooks_by_token[token] = _Lane("hook", corr, token)
                lanes.setdefault("#" + corr, hooks_by_token[token])  # not drawn; for receipt
                continue
            lane = _Lane("hook", corr, token)
            lane.segments.append(_Segment("hook", at))
            lane.status = "waiting" if kind == "hook_created" else "conflict"
            if kind == "hook_conflict":
                lane.segments[-1].end = at
            lanes[corr] = lane
        elif kind == "hook_received":
            if "#" + corr in lanes:  # a child's end
                token = lanes["#" + corr].name
                step_id = token.rsplit(":", 1)[-1]
                child_lane = lanes.get(step_id)
                if child_lane is not None:
                    payload = _value(data.get("payload"))
                    segment = child_lane.open()
                    if segment is not None:
                        segment.end = at
                    ended = payload.get("status") if isinstance(payload, dict) else None
                    child_lane.status = str(ended or "ended")
                continue
            if corr in lanes:  # the wait lasted until this payload (the latest, if several)
                lane = lanes[corr]
                lane.marks.append(at)
                lane.status = "received"
                if lane.segments:
                    lane.segments[-1].end = at
        elif kind == "hook_disposed" and corr in lanes:
            lane = lanes[corr]
            segment = lane.open()
            if segment is not None:
                segment.end = at
            if lane.status == "waiting":
                lane.status = "disposed"
    _close_backoffs(lanes)
    drawn = [lane for key, lane in lanes.items() if not key.startswith("#")]
    for lane in drawn:
        if end is not None:  # the run ended: whatever was open stopped with it
            for segment in lane.segments:
                if segment.end is None or segment.end > end:
                    segment.end = end
                if segment.kind == "attempt" and segment.outcome == "running":
                    segment.outcome = "interrupted"
            if lane.status in ("running", "waiting", "sleeping", "retrying"):
                lane.status = "ended with the run"
    finish = end or now
    return {
        "start": timestamp(start),
        "end": timestamp(end),
        "ongoing": end is None,
        "status": status,
        "duration_ms": _ms(finish - start),
        "lanes": [
            {
                "kind": lane.kind,
                "id": lane.id,
                "name": lane.name,
                "status": lane.status,
                "segments": [s.as_dict(start) for s in lane.segments],
                "marks": [{"at": timestamp(m), "at_ms": _ms(m - start)} for m in lane.marks],
                **({"child_run_id": lane.child_run_id} if lane.kind == "child" else {}),
            }
            for lane in drawn
        ],
    }


def _start_attempt(lane: _Lane, at: datetime, data: dict[str, Any]) -> None:
    previous = lane.open()
    if previous is not None:
        if previous.kind == "attempt":  # started again without an end: a crash mid-step
            previous.end, previous.outcome = at, "interrupted"
        else:  # the back-off ended when the next attempt started
            previous.end = at
    lane.backoff_until = None
    number = sum(1 for s in lane.segments if s.kind == "attempt") + 1
    lane.segments.append(_Segment("attempt", at, attempt=number, outcome="running"))
    lane.status = "running"


def _close_backoffs(lanes: dict[str, _Lane]) -> None:
    """A back-off still open (no next attempt yet) lasts until its retryAfter."""
    for lane in lanes.values():
        segment = lane.open()
        if segment is not None and segment.kind == "backoff" and lane.backoff_until is not None:
            segment.end = lane.backoff_until


# --- drawing ----------------------------------------------------------------------------------

UNICODE = {
    "attempt": "█",
    "failed": "▒",
    "backoff": "·",
    "sleep": "─",
    "hook": "░",
    "mark": "◆",
    "child": "═",
}
ASCII = {
    "attempt": "#",
    "failed": "x",
    "backoff": ".",
    "sleep": "-",
    "hook": "~",
    "mark": "*",
    "child": "=",
}
LEGEND = (
    ("attempt", "step attempt"),
    ("failed", "failed attempt"),
    ("backoff", "back-off"),
    ("sleep", "sleep"),
    ("hook", "hook wait"),
    ("mark", "payload"),
    ("child", "child run"),
)


def duration(ms: float) -> str:
    """A compact duration: 850us, 12ms, 3.4s, 5m10s, 2h5m, 3d4h."""
    seconds = ms / 1000
    if seconds < 0.001:
        return f"{round(ms * 1000)}us"
    if seconds < 1:
        return f"{ms:.0f}ms" if ms >= 10 else f"{ms:.1f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, sec = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h"


def render(timeline: dict[str, Any], width: int = 100, ascii_only: bool = False) -> list[str]:
    """The timeline as lines: a header, a time axis, one row per lane, a legend."""
    glyphs = ASCII if ascii_only else UNICODE
    total = max(float(timeline["duration_ms"]), 0.001)
    state = timeline["status"] + (", ongoing" if timeline["ongoing"] else "")
    header = f"timeline: {duration(total)} ({state}), from {timeline['start']}"
    lanes = timeline["lanes"]
    if not lanes:
        return [header, "  (no steps, sleeps, hooks or children yet)"]
    labels = [f"{lane['kind']:<5} {lane['name']}" for lane in lanes]
    notes = [_note(lane) for lane in lanes]
    label_w = min(max(len(x) for x in labels), 34)
    note_w = min(max(len(x) for x in notes), 34)
    bar_w = max(20, width - label_w - note_w - 6)
    lines = [header, _axis(total, bar_w, label_w)]
    for lane, label, note in zip(lanes, labels, notes, strict=True):
        cells = [" "] * bar_w
        for seg in lane["segments"]:
            first = _cell(seg["start_ms"], total, bar_w)
            end_ms = seg["end_ms"] if seg["end_ms"] is not None else total
            last = max(first, _cell(end_ms, total, bar_w, closing=True))
            glyph = glyphs[_glyph(seg)]
            for i in range(first, last + 1):
                if seg["kind"] != "backoff" or cells[i] == " ":
                    cells[i] = glyph
        for mark in lane["marks"]:
            cells[_cell(mark["at_ms"], total, bar_w)] = glyphs["mark"]
        bar = "".join(cells)
        cut = "~" if ascii_only else "…"
        lines.append(f"  {_fit(label, label_w, cut):<{label_w}} |{bar}| {_fit(note, note_w, cut)}")
    lines.append(
        "  " + "  ".join(f"{glyphs[key]} {text}" for key, text in LEGEND if _used(lanes, key))
    )
    for lane in lanes:  # where to look next: `wfctl runs show CHILD`
        if lane["kind"] == "child" and lane.get("child_run_id"):
            lines.append(f"  child {lane['name']}: {lane['child_run_id']}")
    return lines


def _used(lanes: list[dict[str, Any]], key: str) -> bool:
    if key == "mark":
        return any(lane["marks"] for lane in lanes)
    return any(_glyph(seg) == key for lane in lanes for seg in lane["segments"])


def _glyph(seg: dict[str, Any]) -> str:
    if seg["kind"] == "attempt":
        return "failed" if seg.get("outcome") in ("failed", "retried", "interrupted") else "attempt"
    return str(seg["kind"])


def _cell(ms: float, total: float, width: int, closing: bool = False) -> int:
    position = ms / total * width
    index = int(position) - (1 if closing and position == int(position) and position else 0)
    return min(max(index, 0), width - 1)


def _axis(total: float, bar_w: int, label_w: int) -> str:
    """`0` at the left edge, the run's duration at the right, a midpoint between."""
    left, mid, right = "0", duration(total / 2), duration(total)
    row = [" "] * (bar_w + 2)
    row[0 : len(left)] = left
    at = max(len(left) + 1, (bar_w + 2) // 2 - len(mid) // 2)
    if at + len(mid) < bar_w + 2 - len(right) - 1:
        row[at : at + len(mid)] = mid
    row[bar_w + 2 - len(right) :] = right
    return "  " + " " * label_w + " " + "".join(row)


def _note(lane: dict[str, Any]) -> str:
    attempts = [s for s in lane["segments"] if s["kind"] == "attempt"]
    note = str(lane["status"])
    if lane["kind"] == "step" and attempts and attempts[-1]["end_ms"] is not None:
        note += f" in {duration(attempts[-1]['end_ms'] - attempts[-1]['start_ms'])}"
    if len(attempts) > 1:
        note += f", {len(attempts)} attempts"
    if lane["kind"] == "hook" and len(lane["marks"]) > 1:
        note += f" x{len(lane['marks'])}"
    errors = [s["error"] for s in attempts if s.get("error")]
    if lane["status"] == "failed" and errors:
        note += f": {errors[-1]}"
    return note


def _fit(text: str, width: int, cut: str) -> str:
    return text if len(text) <= width else text[: width - 1] + cut
