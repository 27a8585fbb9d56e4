"""Type stubs of the elevator package (see the module docstring of elevator/__init__.py)."""

import os
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import pyarrow as pa

PathLike = Union[str, os.PathLike[str]]

__version__: str

class ElevatorError(Exception):
    """A bad argument (``field`` names it) or a result file that failed (``file``)."""

    field: Optional[str]
    file: Optional[str]
    message: str

class InputError(ElevatorError):
    """Bad input in a file: ``file``, ``line`` (or None), ``field`` (or empty), ``message``."""

    file: str
    line: Optional[int]
    field: str
    message: str

def schedulers() -> list[dict[str, Any]]: ...
def drives() -> list[str]: ...
def scenarios() -> list[str]: ...

class Scenario:
    text: str
    origin: str
    directory: Optional[str]
    name: str
    description: str
    drive: str
    seed: int
    jobs: list[str]
    def __init__(self, text: str, origin: str = ..., directory: Optional[str] = ...) -> None: ...
    @classmethod
    def builtin(cls, name: str) -> Scenario: ...
    @classmethod
    def load(cls, path: PathLike) -> Scenario: ...
    @classmethod
    def from_toml(cls, text: str, origin: str = ...) -> Scenario: ...

def grid_spec(
    scenario: Union[None, str, Scenario, PathLike] = ...,
    *,
    fio: Optional[PathLike] = ...,
    fio_text: Optional[str] = ...,
    trace: Union[None, PathLike, Sequence[PathLike]] = ...,
    trace_format: Optional[str] = ...,
    closed_loop: bool = ...,
    max_requests: Optional[int] = ...,
    speed: Optional[float] = ...,
    drive: Optional[str] = ...,
    sched: Union[str, Sequence[str]] = ...,
    set: Optional[Mapping[str, int]] = ...,
    sweep: Union[None, Mapping[str, Any], Sequence[str]] = ...,
    seed: Optional[int] = ...,
    wakeup_us: Optional[int] = ...,
    requests: bool = ...,
    max_ios: Optional[int] = ...,
) -> dict[str, Any]: ...

class Results:
    table: pa.Table
    def __init__(self, output: Any, keeps_requests: bool, table: Optional[pa.Table] = ...) -> None: ...
    @property
    def requests(self) -> Optional[pa.Table]: ...
    def to_arrow(self) -> pa.Table: ...
    def to_polars(self) -> Any: ...
    def to_pandas(self) -> Any: ...
    def requests_to_polars(self) -> Any: ...

def sim(
    scenario: Union[None, str, Scenario, PathLike] = ...,
    *,
    threads: Optional[int] = ...,
    fio: Optional[PathLike] = ...,
    fio_text: Optional[str] = ...,
    trace: Union[None, PathLike, Sequence[PathLike]] = ...,
    trace_format: Optional[str] = ...,
    closed_loop: bool = ...,
    max_requests: Optional[int] = ...,
    speed: Optional[float] = ...,
    drive: Optional[str] = ...,
    sched: Union[str, Sequence[str]] = ...,
    set: Optional[Mapping[str, int]] = ...,
    sweep: Union[None, Mapping[str, Any], Sequence[str]] = ...,
    seed: Optional[int] = ...,
    wakeup_us: Optional[int] = ...,
    requests: bool = ...,
    max_ios: Optional[int] = ...,
) -> Results: ...

def merge(inputs: Sequence[PathLike], out: PathLike) -> None: ...

def run(
    job: Optional[PathLike] = ...,
    *,
    fio_text: Optional[str] = ...,
    target: Optional[PathLike] = ...,
    sched: Union[str, Sequence[str]] = ...,
    set: Optional[Mapping[str, int]] = ...,
    seed: int = ...,
    allow_overwrite: bool = ...,
    verify: bool = ...,
    requests: bool = ...,
) -> Results: ...

class Campaign:
    store: Path
    def __init__(self, grid: Optional[Mapping[str, Any]] = ..., *, store: PathLike) -> None: ...
    def __len__(self) -> int: ...
    def cell_path(self, cell: int) -> Path: ...
    def done(self) -> list[int]: ...
    def missing(self) -> list[int]: ...
    def coordinates(self, cell: int) -> dict[str, Any]: ...
    def run(
        self,
        engine: str = ...,
        *,
        threads: Optional[int] = ...,
        address: Optional[str] = ...,
        workers: Optional[int] = ...,
        cells_per_task: int = ...,
        timeout_s: Optional[float] = ...,
    ) -> int: ...
    def results(self) -> pa.Table: ...
    def requests(self) -> pa.Table: ...
    def to_polars(self) -> Any: ...
    def to_pandas(self) -> Any: ...
