"""An order service on wfctl: workflows (`flows.py`), the web-side calls (`service.py`) and
their tests (`test_orders.py`, on `wfctl.testing`). See README.md beside this file."""
