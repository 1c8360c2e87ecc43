-- node_peers: signs of a Node world deployment sharing this database: the graphile-worker
-- queue schema with the world's task, and sessions connected to it now.
SELECT to_regclass('graphile_worker._private_tasks') IS NOT NULL AS has_queue,
       (SELECT count(*) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()
          AND (query ILIKE '%%graphile_worker%%' OR application_name ILIKE '%%graphile%%'))
       AS queue_sessions;
