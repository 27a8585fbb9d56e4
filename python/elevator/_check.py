"""Argument checks for the public API: every bad argument raises :class:`ElevatorError`
naming the argument, before anything reaches the native module.

Without them, a float was cut to an integer (``seed=1.5`` ran seed 1), NaN or infinity became
JSON the native side could not parse (a ``ValueError`` about a column of the grid's JSON, not
the argument), a string of paths was split into characters, and ``threads=10**6`` asked for a
million threads.
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
import os
import stat
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Iterable, Optional

from ._elevator import ElevatorError

#: The largest thread or worker count accepted (a pool of more is a mistake, not a plan).
MAX_THREADS = 1024
I64 = (-(2**63), 2**63 - 1)
U64 = (0, 2**64 - 1)
#: The most items a list argument (schedulers, trace files, sweep axes, an axis's values) may
#: hold: the grid's bound on its cells (``MAX_CELLS`` in the native grid). An endless
#: iterator (``itertools.count()``) or a range of 10**12 values is refused after this many,
#: not expanded until memory runs out.
MAX_ITEMS = 100_000


def error(name: str, message: str) -> ElevatorError:
    e = ElevatorError(f"{name}: {message}")
    e.field = name
    e.message = message
    return e


def shown(v: Any) -> str:
    """``v`` for a message, at most 60 characters. An integer too long for ``repr``
    (Python refuses to print one of more than 4300 digits: ``seed=10**5000`` raised a
    ``ValueError`` from the message, not the argument's error) is described by its size."""
    try:
        s = repr(v)
    except ValueError:
        if isinstance(v, numbers.Integral):
            return f"an integer of {int(v).bit_length()} bits"
        return f"a {type(v).__name__}"
    return s if len(s) <= 60 else s[:57] + "..."


def shown_text(s: str, n: int = 60) -> str:
    """``s`` for a message: at most ``n`` characters, a longer one cut in its middle (the start
    and the end name a path best). A 60 KB name or path given to the API was quoted whole in
    its error."""
    return s if len(s) <= n else s[: n // 2] + "..." + s[-(n // 2 - 3) :]


def integer(name: str, v: Any, lo: int, hi: int) -> int:
    """``v`` as an int in ``lo..=hi``; a bool, a float (even 2.0), NaN, a string or None is
    refused, so nothing is cut or guessed (numpy integers are integers)."""
    try:
        if isinstance(v, bool):
            raise TypeError
        i = operator.index(v)
    except TypeError:
        raise error(name, f"expected an integer from {lo} to {hi}, got {shown(v)}") from None
    if not lo <= i <= hi:
        raise error(name, f"{shown(i)} is out of range: expected {lo} to {hi}")
    return i


def _range_len(v: range) -> int:
    """``len(v)``, which raises OverflowError past ``sys.maxsize`` (``range(10**20)``)."""
    try:
        return len(v)
    except OverflowError:
        return MAX_ITEMS + 1


def bounded(name: str, v: Iterable, what: str) -> list:
    """The items of ``v``, at most :data:`MAX_ITEMS` of them (refused past it, without
    reading further). A set or a mapping is refused: the items' order is the cells' order,
    which a set of strings changes from one process to the next (hash randomisation: a
    campaign resumed elsewhere would file its cells under other coordinates), and a mapping
    would give its keys only (``sweep={"seed": {1: 2}}`` ran seed 1 without a word)."""
    if isinstance(v, (AbstractSet, Mapping)):
        kind = "a mapping (its keys only would be taken)" if isinstance(v, Mapping) else "a set (unordered)"
        raise error(name, f"expected a list of {what}, got {kind}: give a list, in the order of the cells")
    if isinstance(v, range) and _range_len(v) > MAX_ITEMS:
        raise error(name, f"{shown(v)} holds more than {MAX_ITEMS} {what}: at most {MAX_ITEMS} are taken")
    try:
        out = list(itertools.islice(iter(v), MAX_ITEMS + 1))
    except Exception as e:
        # A generator that raises: its own exception (a RuntimeError, a StopIteration turned
        # RuntimeError ...) escaped the API, naming neither the argument nor the package.
        raise error(name, f"reading its {what} raised {type(e).__name__}: {shown_text(str(e))}") from e
    if len(out) > MAX_ITEMS:
        raise error(name, f"more than {MAX_ITEMS} {what} (an endless iterator?): at most {MAX_ITEMS} are taken")
    return out


def optional_integer(name: str, v: Any, lo: int, hi: int) -> Optional[int]:
    return None if v is None else integer(name, v, lo, hi)


def real(name: str, v: Any, lo: float, hi: float) -> float:
    """``v`` as a finite float in ``lo..=hi`` (NaN and infinities refused)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise error(name, f"expected a number from {lo:g} to {hi:g}, got {shown(v)}")
    try:
        f = float(v)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f) or not lo <= f <= hi:
        raise error(name, f"{shown(v)} is out of range: expected a finite number from {lo:g} to {hi:g}")
    return f


def flag(name: str, v: Any) -> bool:
    """``v`` as a bool: True, False (or 0 and 1); anything else is refused, where ``bool("no")``
    would have been True."""
    if isinstance(v, bool):
        return v
    # numpy's bool_ is neither a bool nor an Integral (``requests=np.True_`` was refused).
    if getattr(getattr(v, "dtype", None), "kind", None) == "b" and getattr(v, "ndim", 1) == 0:
        return bool(v)
    if isinstance(v, numbers.Integral) and int(v) in (0, 1):
        return bool(v)
    raise error(name, f"expected True or False, got {shown(v)}")


def unicode(name: str, v: str) -> str:
    """``v`` if it is text UTF-8 can carry. A lone surrogate (``"\\udcff"``, or a path
    whose bytes are not UTF-8 as ``os.fsdecode`` gives it) reached the native module as a
    JSON escape it could not read, and the error named the grid's JSON, not the argument."""
    try:
        v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise error(
            name,
            f"not UTF-8 text: a lone surrogate {v[e.start]!r} at character {e.start} (paths, "
            "names and texts are passed as UTF-8)",
        ) from None
    return v


def waits_for_a_writer(mode: int) -> Optional[str]:
    """What a file of ``mode`` is when reading it waits for another program (a FIFO, a
    socket), else ``None``."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


def text(name: str, v: Any) -> str:
    """``v`` as a string (not empty, no NUL byte, UTF-8)."""
    if not isinstance(v, str):
        raise error(name, f"expected a string, got {shown(v)}")
    if not v:
        raise error(name, "empty")
    if "\0" in v:
        raise error(name, "contains a NUL character")
    return unicode(name, v)


def path(name: str, v: Any) -> str:
    """``v`` as a path string (``str`` or ``os.PathLike``; not empty, no NUL byte)."""
    if isinstance(v, (bytes, bytearray)):
        raise error(name, f"expected a path (str or pathlib.Path), got bytes {shown(v)}")
    try:
        p = os.fspath(v)
    except TypeError:
        raise error(name, f"expected a path (str or pathlib.Path), got {shown(v)}") from None
    if isinstance(p, bytes):
        raise error(name, f"expected a path (str or pathlib.Path), got bytes {shown(v)}")
    return text(name, p)


def paths(name: str, v: Any) -> list[str]:
    """One path, or a non-empty sequence of paths (a single string is one path, never split
    into characters)."""
    if isinstance(v, (str, os.PathLike)):
        return [path(name, v)]
    if isinstance(v, (bytes, bytearray)) or not isinstance(v, Iterable):
        raise error(name, f"expected a path or a list of paths, got {shown(v)}")
    out = [path(f"{name}[{i}]", p) for i, p in enumerate(bounded(name, v, "paths"))]
    if not out:
        raise error(name, "an empty list: give at least one path")
    return out


def names(name: str, v: Any) -> list[str]:
    """Scheduler names: ``"a,b"`` or a non-empty sequence of non-empty strings."""
    if isinstance(v, str):
        out = [s.strip() for s in v.split(",")]
    elif isinstance(v, Iterable) and not isinstance(v, (bytes, bytearray)):
        out = bounded(name, v, "names")
    else:
        raise error(name, f"expected a name or a list of names, got {shown(v)}")
    if not out:
        raise error(name, "an empty list: give at least one scheduler")
    for i, s in enumerate(out):
        if not isinstance(s, str) or not s.strip():
            raise error(name, f"item {i}: expected a scheduler's name, got {shown(s)}")
        unicode(name, s)
    return out


def settings(name: str, v: Any) -> dict[str, int]:
    """Tunables: a mapping of names to integers."""
    if not hasattr(v, "items"):
        raise error(name, f"expected a mapping of tunable names to integers, got {shown(v)}")
    out = {}
    for k, x in v.items():
        if not isinstance(k, str) or not k:
            raise error(name, f"expected tunable names (strings), got the key {shown(k)}")
        unicode(name, k)
        out[k] = integer(f"{name}[{k!r}]", x, *I64)
    return out


def threads(name: str, v: Any) -> Optional[int]:
    """A thread or worker count: None (all cores) or 1 to :data:`MAX_THREADS`."""
    return optional_integer(name, v, 1, MAX_THREADS)


def axis_values(key: str, v: Any) -> str:
    """The values of sweep axis ``key`` as the CLI's text: a string as given, a range as
    ``lo..hi``, a non-empty iterable of integers, strings or bools; a float must be finite."""
    where = f"sweep[{key!r}]"
    if isinstance(v, str):
        if not v.strip():
            raise error(where, "empty: give at least one value")
        return unicode(where, v)
    if isinstance(v, range):
        if not v:
            raise error(where, f"{shown(v)} is empty: give at least one value")
        if not (I64[0] <= v.start and v.stop - 1 <= U64[1]):
            raise error(where, f"{shown(v)} is out of range: expected {I64[0]} to {U64[1]}")
        if v.step == 1:
            return f"{v.start}..{v.stop - 1}"
    if isinstance(v, (bytes, bytearray)) or not isinstance(v, Iterable):
        raise error(where, f"expected a list of values, got {shown(v)}")
    out = []
    for x in bounded(where, v, "values"):
        if isinstance(x, bool):
            out.append(str(x).lower())
        elif isinstance(x, numbers.Integral):
            if not I64[0] <= int(x) <= U64[1]:
                raise error(where, f"{shown(x)} is out of range: expected {I64[0]} to {U64[1]}")
            out.append(str(int(x)))
        elif isinstance(x, numbers.Real):
            try:
                finite = math.isfinite(float(x))
            except OverflowError:
                finite = False
            if not finite:
                raise error(where, f"{x!r} is not a finite number")
            out.append(str(x))
        elif isinstance(x, (str, os.PathLike)):
            s = os.fspath(x)
            if not isinstance(s, str) or not s.strip() or "," in s:
                raise error(where, f"{shown(x)}: expected a value without commas")
            out.append(unicode(where, s))
        else:
            raise error(where, f"{shown(x)}: expected an integer, a string or a bool")
    if not out:
        raise error(where, "an empty list: give at least one value")
    return ",".join(out)
