"""WF136: a run of the wfctl runtime that nothing drives (its process died, or no worker)."""

from wfctl.doctor.base import Check, Explanation, Needs, Severity

CHECK = Check(
    code="WF136",
    title="wfctl run that nothing drives",
    severity=Severity.WARNING,
    remedy="start a `wfctl worker` serving the workflow, or wfctl repair --only WF136 "
    "(hands the run to a queue), then --apply",
    explanation=Explanation(
        meaning="A pending or running run written by wfctl's runtime (deployment 'wfctl') has "
        "no driver: no session holds its run lock, and it is either in no queue (entity "
        "'not queued'), or its driver's lease ran out and no worker has recovered it ('lease "
        "expired'), or it is ready in its queue and no live worker of that queue serves its "
        "workflow ('unserved'). A run parked on a hook or sleeping until a later time is not "
        "reported.",
        why_stuck="wfctl runs advance only in a process that drives them. The process that "
        "started this one (`wfctl run`, `RunHandle.result()`, a worker) is gone, and nothing "
        "else will pick the run up: an unqueued run is invisible to workers, an expired lease "
        "is cleared only by a live worker's recovery, and a ready run is claimed only by a "
        "worker that imports its workflow.",
        cause="A `wfctl run` or web process killed (SIGKILL, OOM, redeploy) while driving a "
        "run: wfctl before leases for in-process drives left no queue row; with them, the "
        "lease expires and waits for a worker. Or `start()` without `result()`, or workers "
        "not deployed for the queue or workflow.",
        repair="'not queued': insert the run's queue row (queue `default`, ready now) and "
        "notify the queue's workers; 'lease expired': clear the lease (ready now), as a "
        "worker's recovery does; each re-checked in the repair transaction (still active, "
        "still undriven, row unchanged), audited. 'unserved': nothing to write; start a "
        "worker that serves the workflow on that queue (`wfctl worker status` lists it).",
    ),
    needs=frozenset({Needs.RUN_QUEUE}),
)
