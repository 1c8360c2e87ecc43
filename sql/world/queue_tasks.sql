-- queue_tasks: the task identifiers graphile-worker has registered in this world (a task is
-- registered the first time a job names it), with their jobs now. What a world's runtimes
-- queued, whatever the release says: a 4.x past leaves `<prefix>steps` on a later world.
SELECT t.identifier, count(j.id) AS jobs
FROM graphile_worker._private_tasks t
LEFT JOIN graphile_worker._private_jobs j ON j.task_id = t.id
GROUP BY t.identifier
ORDER BY t.identifier;
