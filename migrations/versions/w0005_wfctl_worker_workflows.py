"""The workflow names each live worker serves (`wfctl.workers.workflows`).

Revision ID: w0005_wfctl_worker_workflows

On wfctl's own branch (label `wfctl`, after `w0004_wfctl_worker`): schema `wfctl` only, the
same for both eras. `wfctl worker status` compares the ready runs' workflow names with it.
"""

from alembic import op

from wfctl.world.bootstrap import run_sql_file

revision = "w0005_wfctl_worker_workflows"
down_revision = "w0004_wfctl_worker"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file(op.get_bind(), "bootstrap/wfctl_worker_workflows")
