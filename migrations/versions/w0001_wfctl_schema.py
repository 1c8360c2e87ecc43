"""wfctl's own schema and its repair audit log.

Revision ID: w0001_wfctl_schema
"""

from alembic import op

from wfctl.world.bootstrap import run_sql_file

revision = "w0001_wfctl_schema"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file(op.get_bind(), "bootstrap/wfctl_schema")
