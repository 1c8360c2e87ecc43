"""The wheel an operator installs works on its own: it carries every file wfctl reads.

wfctl reads its queries from the top-level `sql/` and its alembic revisions from
`migrations/`. A source checkout (the editable install the README uses, these tests) reads
them in place; a wheel has no checkout, so pyproject.toml maps both folders into the package
(`wfctl._sql`, `wfctl._migrations`) and `wfctl.sql.shipped` finds them there. Judged by
building the wheel as pip builds it for a user (isolated build), installing it into a folder
of its own, and running `bootstrap` and `doctor` from that folder only, away from the checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from setuptools import find_packages

from tests.conftest import ROOT, Db

MAPPED = {"wfctl._sql": "sql", "wfctl._migrations": "migrations"}


def test_the_package_list_names_every_package_and_the_mapped_folders() -> None:
    """pyproject.toml lists the packages (a list cannot also be found): it must stay equal to
    the packages under wfctl/, plus the two mapped folders."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = find_packages(where=str(ROOT), include=["wfctl", "wfctl.*"])
    assert sorted(config["packages"]) == sorted([*found, *MAPPED])
    assert config["package-dir"] == MAPPED


@pytest.mark.slow
def test_the_installed_wheel_bootstraps_and_diagnoses_a_world(tmp_path: Path, empty_db: Db) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = wheels.glob("wfctl-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, package in (("sql", "_sql"), ("migrations", "_migrations")):
        source = {
            p.relative_to(ROOT / folder).as_posix()
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        assert {f"wfctl/{package}/{name}" for name in source} <= names, folder

    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.endswith("DATABASE_URL")}
    env["PYTHONPATH"] = str(target)  # ahead of the editable install's finder

    def installed(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, cwd=tmp_path, env=env,
            timeout=120,
        )  # fmt: skip

    where = installed("-c", "import wfctl; print(wfctl.__file__)")
    assert where.stdout.strip().startswith(str(target)), where
    boot = installed("-m", "wfctl", "--dsn", empty_db.dsn, "bootstrap")
    assert boot.returncode == 0, boot.stderr
    doctor = installed("-m", "wfctl", "--dsn", empty_db.dsn, "--format", "json", "doctor")
    assert doctor.returncode == 0, doctor.stderr
    assert json.loads(doctor.stdout)["summary"]["status"] == "ok"
