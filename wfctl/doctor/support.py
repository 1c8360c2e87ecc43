"""Whether a check applies on a release, in words: for `doctor --explain`, docs/checks.md and
docs/releases.md.

Why here and not in wfctl.world.releases: it joins a check (doctor) with a release (world);
the world layer must not know checks.
"""

from __future__ import annotations

from wfctl.doctor.base import Check, Needs
from wfctl.world.releases import Release


def check_support(check: Check, release: Release) -> tuple[bool, str]:
    """Whether `check` applies on `release`, and a short phrase saying how (its severity
    there and why, or why not)."""
    if Needs.SLOTS in check.needs and release.key != "slot":
        return False, "not applicable (slot-era worlds only)"
    if "*" in release.refuses:
        return False, "not applicable: wfctl does not act on this release"
    if check.code in release.not_applicable:
        return False, f"not applicable: {release.not_applicable[check.code]}"
    lacking = sorted(c for c in check.needs_columns if not release.has_column(c))
    if lacking:
        return False, f"not applicable (no {', '.join(lacking)})"
    rule = release.weight(check.code, check.severity)
    if rule is not None:
        return True, f"{rule.severity.value}: {rule.why}"
    return True, check.severity.value
