"""Alembic environment for wfctl: runs on the connection `wfctl.world.bootstrap` hands it.

The version table lives in wfctl's own schema (`wfctl.alembic_version`) so that wfctl never
adds anything to the package's schemas beyond what the package itself would create.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

connection = context.config.attributes["connection"]
connection.execute(text("CREATE SCHEMA IF NOT EXISTS wfctl"))
context.configure(
    connection=connection,
    version_table="alembic_version",
    version_table_schema="wfctl",
    transactional_ddl=True,
)
with context.begin_transaction():
    context.run_migrations()
