-- revival_shape: what `repair --allow-revive` must know about a run the runtime failed because
-- a late step_started sorts after its step's terminal event (WF141; a clock-skewed peer that
-- re-ran a live step minted its id on a clock ahead). One row:
-- late_starts: every step_started of the run sorting after its step's first terminal event
--   (id, step id, that terminal event's id, and the event just before that terminal event:
--   the re-minted id goes between the two);
-- run_terminals: the run's run_completed / run_failed / run_cancelled events (id, type);
-- after_failure: events other than those late starts sorting after the run_failed;
-- open_hooks: hooks created and not disposed: the run's failure deleted their rows (and freed
--   their tokens), so a revived run would find them gone (open waits: repair/open_waits).
-- params: run_id
WITH ev AS (
    SELECT e.id, e.type, e.correlation_id
    FROM workflow.workflow_events e
    WHERE e.run_id = %(run_id)s
),
terminal AS (
    SELECT correlation_id, min(id) AS first_terminal
    FROM ev
    WHERE type IN ('step_completed', 'step_failed') AND correlation_id IS NOT NULL
    GROUP BY 1
),
late AS (
    SELECT s.id, s.correlation_id, t.first_terminal,
           (SELECT max(p.id) FROM ev p WHERE p.id < t.first_terminal) AS before_terminal
    FROM ev s
    JOIN terminal t ON t.correlation_id = s.correlation_id
    WHERE s.type = 'step_started' AND s.id > t.first_terminal
),
ends AS (
    SELECT id, type FROM ev WHERE type IN ('run_completed', 'run_failed', 'run_cancelled')
)
SELECT
    coalesce((SELECT jsonb_agg(jsonb_build_object(
                  'id', l.id, 'step_id', l.correlation_id, 'terminal_id', l.first_terminal,
                  'before_terminal', l.before_terminal) ORDER BY l.id) FROM late l),
             '[]'::jsonb) AS late_starts,
    coalesce((SELECT jsonb_agg(jsonb_build_object('id', x.id, 'type', x.type) ORDER BY x.id)
              FROM ends x), '[]'::jsonb) AS run_terminals,
    (SELECT count(*) FROM ev a
     WHERE a.id > (SELECT min(id) FROM ends WHERE type = 'run_failed')
       AND a.id NOT IN (SELECT id FROM late)) AS after_failure,
    (SELECT count(*) FROM (
         SELECT correlation_id FROM ev
         WHERE type IN ('hook_created', 'hook_disposed') AND correlation_id IS NOT NULL
         GROUP BY correlation_id
         HAVING NOT bool_or(type = 'hook_disposed')) o) AS open_hooks;
