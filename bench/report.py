"""Results: tables printed with aligned columns (valid Markdown), saved as CSV; the environment of a run.

A benchmark builds ``Table`` objects: columns say what is shown and how it is formatted; rows are dicts
that may carry more keys than the columns (percentiles, raw seconds), which go to the CSV only.

>>> t = Table("demo", "Demo", [Column("op", "op"), Column("us", "µs", fmt_time)])
>>> row = t.add(op="add", us=1.234)
>>> print(t.to_markdown())  # doctest: +NORMALIZE_WHITESPACE
### Demo
<BLANKLINE>
| op  |   µs |
|:----|-----:|
| add | 1.23 |
"""

from __future__ import annotations

import csv
import datetime as _datetime
import math
import os
import platform
import sys
from dataclasses import dataclass, field

__all__ = ["Column", "Table", "environment", "render_environment", "render", "write_csv", "fmt_time",
           "fmt_ratio", "fmt_rate", "MISSING"]

MISSING = "—"


def _finite(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def fmt_time(v) -> str:
    """A time (any unit) with 3 significant figures, no exponent: 0.312, 8.35, 12.4, 1234."""
    if not _finite(v):
        return MISSING
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def fmt_ratio(v) -> str:
    return f"{v:.2f}" if _finite(v) else MISSING


def fmt_rate(v) -> str:
    """GB/s or GFLOP/s."""
    if not _finite(v):
        return MISSING
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}"


def _fmt_text(v) -> str:
    return "" if v is None else str(v)


@dataclass
class Column:
    """``key`` in the row dicts, ``header`` shown, ``fmt`` value → text; numbers align right, text left."""

    key: str
    header: str
    fmt: object = _fmt_text
    numeric: bool = False

    def __post_init__(self):
        if self.fmt is not _fmt_text:
            self.numeric = True


@dataclass
class Table:
    """A titled table of rows; ``notes`` are printed under it."""

    name: str                  # short id, the CSV's "table" column
    title: str
    columns: list[Column]
    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, **row) -> dict:
        self.rows.append(row)
        return row

    def cells(self) -> list[list[str]]:
        return [[c.fmt(r.get(c.key)) for c in self.columns] for r in self.rows]

    def to_markdown(self) -> str:
        """The table as a Markdown pipe table whose columns are also aligned for a terminal."""
        cells = self.cells()
        heads = [c.header for c in self.columns]
        widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(heads)]
        widths = [max(w, 3) for w in widths]

        def line(vals):
            parts = [(v.rjust(w) if c.numeric else v.ljust(w)) for v, w, c in zip(vals, widths, self.columns)]
            return "| " + " | ".join(parts) + " |"

        sep = "|" + "|".join((("-" * (w + 1) + ":") if c.numeric else (":" + "-" * (w + 1)))
                             for w, c in zip(widths, self.columns)) + "|"
        out = [f"### {self.title}", "", line(heads), sep] + [line(r) for r in cells]
        if self.notes:
            out.append("")
            out += [f"- {n}" for n in self.notes]
        return "\n".join(out)


def render(tables) -> str:
    return "\n\n".join(t.to_markdown() for t in tables)


def write_csv(path: str, tables) -> None:
    """All rows of all tables in one CSV: a ``table`` column, then the union of the row keys in order."""
    keys: list[str] = ["table"]
    for t in tables:
        for r in t.rows:
            for k in r:
                if k not in keys:
                    keys.append(k)
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=keys, restval="")
        w.writeheader()
        for t in tables:
            for r in t.rows:
                w.writerow({"table": t.name, **{k: ("" if v is None else v) for k, v in r.items()}})


# ------------------------------------------------------------------------------------------- environment
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for ln in f:
                if ln.lower().startswith("model name"):
                    return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _blas() -> str:
    import numpy as np

    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:  # noqa: BLE001 - older NumPy, or a build without the info: say so, do not fail
        return "unknown"
    text = f"{info.get('name', '?')} {info.get('version', '')}".strip()
    conf = info.get("openblas configuration")
    return f"{text} ({conf.strip()})" if conf else text


_ENV_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
             "TKERNELS_INTERPRET", "TRITON_INTERPRET")


def environment(extra: dict | None = None) -> dict[str, str]:
    """What a reader needs to compare runs: machine, versions, date, relevant environment variables."""
    import numpy as np

    try:
        import tkernels

        tk_version = getattr(tkernels, "__version__", "unknown")
    except Exception as e:  # noqa: BLE001 - the bench still describes the machine when the library is broken
        tk_version = f"import failed: {type(e).__name__}: {e}"
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    env = {
        "date": _datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "host": platform.node(),
        "cpu": _cpu_model(),
        "cores": f"{os.cpu_count()} logical, {usable} usable by this process",
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "blas": _blas(),
        "tkernels": tk_version,
    }
    try:  # the host allocator's policy (tkernels/backends/numpy/malloc.py): page faults per step depend on it
        from tkernels.backends.numpy import malloc as _malloc

        env["malloc"] = _malloc.STATUS
    except Exception as e:  # noqa: BLE001
        env["malloc"] = f"unknown ({type(e).__name__})"
    try:
        env["load"] = "load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg())
    except (AttributeError, OSError):
        pass
    for var in _ENV_VARS:
        if os.environ.get(var):
            env[var] = os.environ[var]
    if extra:
        env.update(extra)
    return env


def render_environment(env: dict[str, str]) -> str:
    width = max(len(k) for k in env)
    return "\n".join(f"- {k.ljust(width)} : {v}" for k, v in env.items())
