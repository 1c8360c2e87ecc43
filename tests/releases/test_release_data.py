"""The known-migration data is what the published packages hold, never hand-typed.

Regenerates wfctl/data/migrations.json and packages.json the way benchmarks/release_data.py
does (`npm pack` of every published @workflow/world-postgres, each migration applied on a
scratch database of the test server) and compares with the committed files.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import Server, node_available

SCRIPT = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "release_data.py"


def test_the_committed_data_is_what_the_packages_hold(pg_server: Server, tmp_path) -> None:
    if not node_available():
        pytest.skip("node/npm not found: the packages cannot be packed")
    spec = importlib.util.spec_from_file_location("release_data", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    # The versions the data holds (a release published since is added by running the script).
    known = list(json.loads((script.DATA / "packages.json").read_text())["versions"])
    migrations, packages = script.generate(pg_server.admin_dsn, tmp_path, known)
    assert migrations == (script.DATA / "migrations.json").read_text()
    assert packages == (script.DATA / "packages.json").read_text()
