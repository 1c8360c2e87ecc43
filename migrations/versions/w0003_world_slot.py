"""The slot era: hook token retention, events keyed (run_id, id), the slot marker table.

Revision ID: w0003_world_slot
"""

from alembic import op

from wfctl.world.bootstrap import run_sql_file

revision = "w0003_world_slot"
down_revision = "w0002_world_beta29"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file(op.get_bind(), "bootstrap/world_slot")
