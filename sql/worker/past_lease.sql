-- past_lease: leased runs whose lease has expired (recovery will hand them to another worker).
SELECT run_id, queue, workflow_name, lease_owner,
       extract(epoch FROM now() - lease_until)::float8 AS overdue
FROM wfctl.run_queue
WHERE lease_owner IS NOT NULL AND lease_until < now()
ORDER BY lease_until;
