"""How much a finding weighs: shared by the checks and the release descriptions.

Why its own module: `wfctl.world.releases` says how each release's runtime weighs a torn write
(a release fact), and the doctor weighs findings with it; `world` must not import `doctor`.
`wfctl.doctor.base` re-exports it.
"""

from __future__ import annotations

import enum


class Severity(enum.StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"
