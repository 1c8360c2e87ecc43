"""`wfctl migrate`: upgrade a live world without blocking it.

- `package`: an installed @workflow/world-postgres folder (journal, files, hashes, pending);
- `road`: `--online --package DIR`, the road to the release in DIR, statement by statement;
- `recognise`: what each pending slot-era statement does and which lock it takes;
- `state`: where the swap stands in the catalog, so every phase can tell it already happened;
- `online`: the slot-era swap's phases (prepare, swap, record) and their plan;
- `locks`: bounded lock waits with jittered retries, and single flight;
- `progress`: the concurrent build's progress from pg_stat_progress_create_index;
- `events`: the Reporter the command layer implements (the domain never prints);
- `status`: the read-only report behind `wfctl migrate status`.
"""
