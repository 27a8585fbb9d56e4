"""Medians and ranges for the bench tables (bench/*_table.py): `est` of a list of figures,
`fmt` of what it gives."""
import statistics


def est(v):
    """Median, min, max and count of the figures in `v` (NaN, a run that gave none, left
    out); None when none is left."""
    v = [x for x in v if x == x]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def fmt(e, prefix="", d=2):
    """`median (min-max)` with `d` decimals after `prefix` (e.g. ">=" for a lower bound);
    "-" for None."""
    if e is None:
        return "-"
    return f"{prefix}{e['median']:.{d}f} ({e['min']:.{d}f}-{e['max']:.{d}f})"
