"""Repairs: one module per code (`wf101.py`), each turning a re-verified finding into the
events (or queue actions) that complete the half-written state. `runner` owns the
transactions, the guards and the audit; a repair module only says what to write."""
