"""Every check, in code order. Adding a family = a module here + its SQL + doc + tests."""

from __future__ import annotations

from wfctl.doctor import (
    wf101,
    wf102,
    wf103,
    wf104,
    wf111,
    wf112,
    wf113,
    wf121,
    wf122,
    wf123,
    wf131,
    wf132,
    wf133,
    wf134,
    wf135,
    wf136,
    wf141,
    wf142,
    wf143,
    wf144,
    wf145,
    wf146,
    wf147,
    wf148,
    wf149,
    wf151,
    wf152,
    wf153,
    wf154,
)
from wfctl.doctor.base import Check
from wfctl.errors import UsageError

CHECKS: tuple[Check, ...] = tuple(
    m.CHECK
    for m in (
        wf101, wf102, wf103, wf104, wf111, wf112, wf113, wf121, wf122, wf123,
        wf131, wf132, wf133, wf134, wf135, wf136, wf141, wf142, wf143, wf144, wf145, wf146, wf147,
        wf148, wf149, wf151, wf152, wf153, wf154,
    )
)  # fmt: skip
BY_CODE = {c.code: c for c in CHECKS}


def get(code: str) -> Check:
    """The check for a code (case-insensitive), or a usage error listing the known codes."""
    try:
        return BY_CODE[code.strip().upper()]
    except KeyError:
        raise UsageError(
            f"unknown check code {code!r}", hint=f"known codes: {', '.join(BY_CODE)}"
        ) from None


def select(only: list[str] | None) -> list[Check]:
    """Checks named by --only (comma lists allowed), or all of them."""
    if not only:
        return list(CHECKS)
    codes = [c for item in only for c in item.split(",") if c.strip()]
    wanted = {get(c).code for c in codes}
    return [c for c in CHECKS if c.code in wanted]
