"""Testing workflows: a pytest plugin (`world` fixture, fake clock), `run_to_end`, and a
replayer for CI (docs/testing.md).

    from wfctl.testing import run_to_end

    def test_checkout(world):
        assert run_to_end(checkout, "order-1") == {"charged": True}   # a 30-day sleep included
        world.clock.advance("1d")

The plugin registers itself through the `pytest11` entry point; `replay_at(dsn, run_ids,
workflow)` replays recorded runs of any database against the current code (no writes).
"""

from wfctl.runtime.replay import NondeterminismError, ReplayResult
from wfctl.testing.world import (
    FakeClock,
    RunBlocked,
    RunFailed,
    World,
    current_world,
    replay,
    replay_at,
    run_to_end,
)

__all__ = [
    "FakeClock",
    "NondeterminismError",
    "ReplayResult",
    "RunBlocked",
    "RunFailed",
    "World",
    "current_world",
    "replay",
    "replay_at",
    "run_to_end",
]
