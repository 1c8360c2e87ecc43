"""Detection families: one module per code (`wf101.py`), one SQL file (`sql/checks/WF101.sql`),
one section in docs/checks.md, one test module, all named by the code, as ruff and sqlfluff
name their rules. `registry.CHECKS` lists them in code order."""
