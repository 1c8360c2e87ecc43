-- dequeue: the run ended (terminal event, cancellation): its queue row goes in the same
-- transaction as the terminal event, whoever holds the lease.
-- params: run_id
DELETE FROM wfctl.run_queue WHERE run_id = %(run_id)s;
