-- session_settings: the doctor transaction's own settings (set_config(..., true): they end
-- with the transaction and touch no other session).
-- work_mem: history checks hash millions of (run, entity) keys; at the server's stock 4MB
-- they spill to disk in hundreds of batches. NULL keeps the server's.
-- random_page_cost: lowered to at most the parameter in the scopes that read a few runs'
-- events by index (live runs, --run); NULL keeps the server's. At the stock 4 (a spinning
-- disk's price) the planner reads a small world's whole events table for each history check
-- rather than look up its 20 live runs (3-4 ms against 0.3 ms, 1,001 runs); an operator's
-- lower setting is kept.
-- row_security: 'off' where no row-level security applies to the role (World.rls_active):
-- a read a policy would filter (one created after wfctl looked) then fails, "query would be
-- affected by row-level security policy", and the check is UNKNOWN, never short of rows.
-- params: work_mem, random_page_cost, row_security.
SELECT set_config('work_mem', coalesce(%(work_mem)s::text, current_setting('work_mem')), true),
       set_config('random_page_cost',
                  least(current_setting('random_page_cost')::float8,
                        coalesce(%(random_page_cost)s::float8, 'Infinity'::float8))::text,
                  true),
       set_config('row_security', %(row_security)s, true);
