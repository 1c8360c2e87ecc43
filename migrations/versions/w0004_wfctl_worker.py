"""wfctl's worker: the queue of ready runs, their leases, and the live workers.

Revision ID: w0004_wfctl_worker

A branch of its own off `w0001_wfctl_schema` (label `wfctl`), NOT a successor of an era
revision: the world's revisions (w0002 beta.29 -> w0003 slot) describe the package's schemas
and are stamped, not run, when wfctl adopts a world; this one only touches schema `wfctl` and
applies to either era. A database bootstrapped by wfctl therefore has two heads in
`wfctl.alembic_version`: its era revision and `w0004_wfctl_worker`.
"""

from alembic import op

from wfctl.world.bootstrap import run_sql_file

revision = "w0004_wfctl_worker"
down_revision = "w0001_wfctl_schema"
branch_labels = ("wfctl",)
depends_on = None


def upgrade() -> None:
    run_sql_file(op.get_bind(), "bootstrap/wfctl_worker")
