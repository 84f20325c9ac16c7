"""Fixtures of the triage tools' tests; the helpers are in tools_support."""

from __future__ import annotations

import json

import pytest

from tools_support import native_program, run_tool


@pytest.fixture(scope="session")
def npu_smi() -> str:
    return native_program("npu-smi")


@pytest.fixture
def doctor_json():
    def run(arguments: list[str], env: dict[str, str]) -> tuple[int, dict]:
        done = run_tool(["doctor", "--json", *arguments], env)
        assert done.stdout.strip(), done.stderr
        return done.returncode, json.loads(done.stdout)

    return run
