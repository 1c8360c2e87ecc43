"""Kept early hook deliveries and typed hooks' payload types (`wfctl.hook_inbox`, `wfctl.hook_types`).

Revision ID: w0006_wfctl_hooks

On wfctl's own branch (label `wfctl`, after `w0005_wfctl_worker_workflows`): schema `wfctl`
only, the same for both eras. `Client.resume_hook(..., keep=...)` keeps a delivery whose hook
does not exist yet; a typed hook records its payload type for `resume_hook` to validate.
"""

from alembic import op

from wfctl.world.bootstrap import run_sql_file

revision = "w0006_wfctl_hooks"
down_revision = "w0005_wfctl_worker_workflows"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file(op.get_bind(), "bootstrap/wfctl_hooks")
