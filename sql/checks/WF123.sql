-- WF123 slot numbering broken in a marked run (§8 F12): holes (the number of slot ids differs
-- from the highest slot), slot 1 holding something other than run_created, or an evnt_ id
-- whose body is not a slot (26 digits, first 10 zero, 1 .. 2^53-1). The runtime fails such
-- runs ("A gap in the numbering fails the run"). Slot-era worlds only.
-- Age: newest event's created_at (DB default) -> localtimestamp.
-- Performance: see `slots` (one parse per event id, no regex); the evnt_ prefix test is a
-- LIKE so the planner estimates it from the id histogram.
-- params: live_only, run_ids, since, min_age.
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    JOIN workflow.workflow_event_slots m ON m.run_id = r.id
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      -- not corruption: retention emptied the run on purpose (expired_at)
      AND r.expired_at IS NULL
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
slots AS (
    SELECT e.run_id, e.type, e.created_at, b.slot
    FROM runs r
    JOIN workflow.workflow_events e ON e.run_id = r.id AND e.id LIKE 'evnt\_%%'
    -- Parse each id once: behind the OFFSET 0 fence the expression is not copied into
    -- every aggregate below, and it can be memoized by id (slot ids repeat in every run).
    CROSS JOIN LATERAL (
        -- nested CASE: the cast must only ever see a 26-digit body. The body test is
        -- ^evnt_0{10}[0-9]{16}$ in plain string functions (that regex costs ~3 us a row).
        SELECT CASE WHEN length(e.id) = 31 AND left(e.id, 15) = 'evnt_0000000000'
                         AND ltrim(substring(e.id FROM 16), '0123456789') = '' THEN
                   CASE WHEN substring(e.id FROM 6)::bigint BETWEEN 1 AND 9007199254740991
                        THEN substring(e.id FROM 6)::bigint END
               END AS slot
        OFFSET 0
    ) b
),
per_run AS (
    SELECT run_id,
           count(slot) AS n,
           max(slot) AS top,
           count(*) - count(slot) AS bad_bodies,
           max(type) FILTER (WHERE slot = 1) AS slot1_type,
           max(created_at) AS newest
    FROM slots
    GROUP BY run_id
)
SELECT p.run_id,
       p.run_id AS entity_id,
       p.newest::timestamptz AS observed_at,
       p.newest >= localtimestamp - %(min_age)s::interval AS in_flight,
       concat_ws('; ',
           CASE WHEN p.n <> coalesce(p.top, 0) THEN
               format('%%s hole(s): %%s slot ids up to slot %%s', p.top - p.n, p.n, p.top) END,
           CASE WHEN p.slot1_type IS DISTINCT FROM 'run_created' THEN
               format('slot 1 is %%s, not run_created', coalesce(p.slot1_type, 'missing')) END,
           CASE WHEN p.bad_bodies > 0 THEN
               format('%%s evnt_ id(s) with a non-slot body', p.bad_bodies) END) AS detail
FROM per_run p
WHERE p.n <> coalesce(p.top, 0)
   OR p.slot1_type IS DISTINCT FROM 'run_created'
   OR p.bad_bodies > 0
ORDER BY p.newest;
