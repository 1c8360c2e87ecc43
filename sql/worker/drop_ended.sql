-- drop_ended: the worker found the run already terminal (its terminal transaction deleted
-- the row, or the run ended outside the queue): remove a leftover row it holds.
-- params: run_id, worker
DELETE FROM wfctl.run_queue WHERE run_id = %(run_id)s AND lease_owner = %(worker)s;
