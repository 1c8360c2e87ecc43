-- duplicates: (run_id, id) pairs held by more than one event, which would make the unique
-- index (and the new key) impossible. Reads the whole table (ACCESS SHARE only); run only
-- when no valid unique index on (id) already rules duplicates out. At most 20 pairs, the
-- most copied first, each with the total number of duplicated pairs.
SELECT run_id, id, count(*) AS copies, count(*) OVER () AS duplicated_pairs
FROM workflow.workflow_events
GROUP BY run_id, id
HAVING count(*) > 1
ORDER BY copies DESC, run_id, id
LIMIT 20;
