"""`wfctl migrate`: the slot-era event key swap without blocking a live world.

- `package`: an installed @workflow/world-postgres folder (journal, files, hashes, pending);
- `recognise`: what each pending statement does and which lock it takes; never guesses;
- `state`: where the swap stands in the catalog, so every phase can tell it already happened;
- `online`: the phases (prepare, swap, record), their plan, retries, single flight;
- `progress`: the concurrent build's progress from pg_stat_progress_create_index;
- `status`: the read-only report behind `wfctl migrate status`.
"""
