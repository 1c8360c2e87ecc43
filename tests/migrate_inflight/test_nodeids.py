"""wfctl/world/nodeids.py against values the real npm packages computed (seedrandom 3.0.5,
ulid 3.0.2 `monotonicFactory`, nanoid 5.1.6 `customRandom`, as @workflow/core uses them), and
the version facts of wfctl/migrate/inflight.py."""

from __future__ import annotations

import pytest

from wfctl.errors import ExitStatus, RefusedError, WfctlError
from wfctl.migrate import inflight
from wfctl.world import nodeids, releases

TIME = 1765000000123
# (seed, the first three ids `monotonicFactory(() => rng())(TIME)` returned, the first draws of
# `seedrandom(seed)()`): printed by node from the packages the 4.1.1 runtime installs.
VECTORS = [
    ("wrun_01M914P6JM:workflow//./workflows/corpus//nap:1765000000123",
     ["01KBS35CKV9MD9JP7MB9SBR47W", "01KBS35CKV9MD9JP7MB9SBR47X", "01KBS35CKV9MD9JP7MB9SBR47Y"],
     [0.8949988162346244, 0.2442261106716311, 0.13434056524008453, 0.7572476232486041]),
    ("",
     ["01KBS35CKVXJZKP3EZ4XK4CS87", "01KBS35CKVXJZKP3EZ4XK4CS88", "01KBS35CKVXJZKP3EZ4XK4CS89"],
     [0.23144008215179881, 0.27404636548159655, 0.7901279251811976, 0.40384160557189036]),
    ("x" * 600 + "é€",  # longer than the 256-byte key: the smear of a second pass
     ["01KBS35CKVYQHWS2FTV44HD2VC", "01KBS35CKVYQHWS2FTV44HD2VD", "01KBS35CKVYQHWS2FTV44HD2VE"],
     [0.3773088076808889, 0.8564836765093781, 0.08352825311641601, 0.423257767491251]),
    ("wrun_01KBX:workflow//a//b:postgres",
     ["01KBS35CKV1PS081QWFDF9EN97", "01KBS35CKV1PS081QWFDF9EN98", "01KBS35CKV1PS081QWFDF9EN99"],
     [0.24872430216143712, 0.2950953574698037, 0.6707321727780771, 0.4441546218250292]),
]  # fmt: skip


@pytest.mark.parametrize(("seed", "expected_ids", "draws"), VECTORS)
def test_seeded_ids_match_the_node_packages(
    seed: str, expected_ids: list[str], draws: list[float]
) -> None:
    rng = nodeids.SeededRandom(seed)
    assert [rng.random() for _ in draws] == draws  # bit for bit
    first = nodeids.first_random(seed)
    assert [nodeids.correlation_body(TIME, first, k) for k in range(3)] == expected_ids
    assert next(nodeids.random_parts(seed, 1)) == (0, first)


def test_the_rolled_search_equals_the_drawn_one() -> None:
    seed = VECTORS[0][0]
    drawn = [(k, nodeids.base32_value(r)) for k, r in nodeids.random_parts(seed, 300)]
    assert list(nodeids.random_values(seed, 300)) == drawn


def test_hook_tokens_match_nanoid() -> None:
    """`createHook()` without a token: one id (16 draws), then nanoid's 34-draw batch."""
    seed = "wrun_01M950WX59EGYPS47VFZW3M4PD:workflow//./workflows/corpus//hooked:1796538791341"
    assert nodeids.minted_token(seed, 16) == "VF1PQtbDpDWexYdvwiMMm"
    assert nodeids.minted_token(seed, 16 + 34) == "C80DD0sJFZt4K-Cmsw6M8"
    minted = nodeids.generated_tokens(seed, 100)
    assert {"VF1PQtbDpDWexYdvwiMMm", "C80DD0sJFZt4K-Cmsw6M8"} <= minted
    assert "inflight-4.1.1-0" not in minted


def test_version_order_and_facts() -> None:
    order = ["4.1.0-beta.46", "4.1.1", "4.3.7", "5.0.0-beta.9", "5.0.0-beta.27",
             "5.0.0-beta.29", "5.0.0"]  # fmt: skip
    assert sorted(order, key=inflight.version_key) == order
    assert inflight.facts_for("4.2.0").ids == releases.STARTED_AT
    assert inflight.facts_for("5.0.0-beta.27").ids == releases.RUN_ID_TIME
    assert inflight.facts_for("5.0.0-beta.29").step_jobs is False


@pytest.mark.parametrize("version", ["4.1.0-beta.46", "5.0.0-beta.30", "6.0.0"])
def test_unknown_versions_are_unknown(version: str) -> None:
    with pytest.raises(WfctlError) as err:
        inflight.facts_for(version)
    assert err.value.status == ExitStatus.UNKNOWN and version in err.value.message


def test_a_downgrade_is_refused(wfctl_world) -> None:  # type: ignore[no-untyped-def]
    with wfctl_world.connect() as conn, pytest.raises(RefusedError) as err:
        inflight.assess(conn, "5.0.0-beta.29", "4.3.7")
    assert err.value.status == ExitStatus.CRITICAL and "downgrade" in err.value.message


def test_runs_of_wfctls_own_runtime_continue(wfctl_world) -> None:  # type: ignore[no-untyped-def]
    """wfctl's worker replays its own runs (ids from run id + counter), whatever the package."""
    from wfctl.runtime.engine import correlation_ulid

    run_id = "wrun_01M950WX59EGYPS47VFZW3M4PD"
    with wfctl_world.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, started_at)"
            " VALUES (%s, 'wfctl', 'running', 'py//checkout', now())",
            (run_id,),
        )
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id)"
            " VALUES ('wevt_01M950WX59EGYPS47VFZW3M4PE', 'step_created', %s, %s)",
            (f"step_{correlation_ulid(run_id, 1)}", run_id),
        )
        [fate] = inflight.assess(conn, "4.1.1", "5.0.0-beta.29")
    assert fate.fate == "continues" and "wfctl's own runtime" in fate.reason
