"""The beta.29 world: schemas, enums, tables, indexes, and drizzle's bookkeeping rows.

Revision ID: w0002_world_beta29
"""

from alembic import op

from wfctl.world.bootstrap import record_drizzle_migrations, run_sql_file

revision = "w0002_world_beta29"
down_revision = "w0001_wfctl_schema"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file(op.get_bind(), "bootstrap/world_beta29")
    record_drizzle_migrations(op.get_bind())
