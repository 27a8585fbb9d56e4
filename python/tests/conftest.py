"""Shared fixtures: the repository's root and a small fio job."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SMALL_FIO = """[reader]
rw=randread
bs=4k
size=16m
number_ios=300
iodepth=4
"""


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def small_fio() -> str:
    return SMALL_FIO
