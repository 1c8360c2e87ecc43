-- unlock_workers: release the jobs (and queues) a dead worker still holds, with
-- graphile-worker's own admin function. Only on the operator's word that the worker is gone
-- (--unlock-dead-worker): a crash inside a delivery leaves its job locked for 4 hours, and
-- while it is locked every repair of that run is refused as "a live writer".
-- params: worker_ids (text[])
SELECT graphile_worker.force_unlock_workers(%(worker_ids)s::text[]);
