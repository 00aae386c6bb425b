"""Sweep runner: a sweep's chunks in process (threads) or on a Dask cluster, into a DataFrame, Parquet or CSV.

    run_sweep(spec)                              -> DataFrame, every configuration in order
    run_sweep(spec, out="results.parquet")       -> SweepRun(rows, chunks, seconds, path); Parquet
                                                    (pyarrow.parquet.ParquetWriter) written chunk by chunk
    run_sweep(spec, out="results.csv")           -> CSV appended chunk by chunk
    run_sweep(spec, out=callback)                -> callback(df) per chunk, in order
    run_sweep(spec, out="results/")              -> a Parquet dataset: part-NNNNNN.parquet per chunk, written
                                                    where the chunk is evaluated (a Dask worker: nothing travels
                                                    back; pd.read_parquet("results/") reads the rows in order)
    run_sweep(spec, reduce=fn)                   -> fn(df) applied to each chunk where it is evaluated (keep the
                                                    rows or columns that matter before they travel or are kept)
    run_sweep(spec, client=dask.distributed.Client(address))   the same rows; chunks evaluated on the
                                                    cluster's workers (each needs perfmodel; the catalogue
                                                    travels as the spec's resolved records)

Chunks (sweep.Plan.tasks) are evaluated `window` at a time ahead of the sink and handed to it in
order, so memory is bounded by window x chunk rows whatever the sweep's size; a returned DataFrame
is written chunk by chunk into columns preallocated at the plan's size (assemble.py: its peak is about the
frame itself, not the chunks and their concatenation). Chunks are evaluated on `workers` threads of this
process (numpy releases the GIL inside its array loops); unset, as many as the CPUs the process may use, at
most DEFAULT_WORKERS_MAX (default_workers), except where a chunk's work has effects of its own (a `reduce`
function, dataset parts written where a chunk is evaluated): there one thread, unless `workers` says more.
The rows are the same whatever the count (each chunk is evaluated alone; the sink receives them in order).
A progress bar (rich, on stderr) counts configurations; progress=False turns it off, a callable gets
(done, total).

A file or dataset is written as `<stem>.partial<suffix>` (dataset: folder `<name>.partial`) and
renamed onto `out` only when every chunk is in: nothing at `out` ever looks complete before it is.
The partial file is locked (flock, core/safe_write.py): a second sweep to the same `out` while
one runs is refused with one line, never interleaved into a corrupt file. A sweep that stops
(KeyboardInterrupt, an error) leaves the rows done in the partial file (a Parquet file with its
footer, readable), says so in one line on stderr and leaves `out` as it was; with no chunk done
it removes the partial file. The next run to `out` reuses (empties) a stale partial file. CSV
text cells a spreadsheet would run as formulas are escaped (a leading ').

Dask workers read no files: the spec is scattered to them once with its System and ModelArch records, each
system carrying the calibration resolved in the client (calibrated sets and overrides included), so both
engines give the same rows.
Worker processes should keep freed memory (WORKER_ENV; local_cluster() sets it): under Dask's
default MALLOC_TRIM_THRESHOLD_=65536 glibc hands every freed chunk-sized array back to the kernel,
and each numpy temporary page-faults afresh (about 3x slower sweeps on the 2-core development machine).
This process gets the same thresholds when a sweep starts (steady_allocator: glibc's mallopt), unless its
environment sets them.
Does not: evaluate anything itself (engine.py).
"""

from __future__ import annotations

import ctypes
import functools
import os
import pickle
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from perfmodel.core import safe_write
from perfmodel.sweep.assemble import ColumnsFrame
from perfmodel.sweep.engine import DEFAULT_CHUNK, Plan, SweepSpec, chunk_columns, evaluate_chunk


@dataclass(frozen=True)
class SweepRun:
    """What a file, dataset or callback sink received: rows (after `reduce`), chunks, wall
    seconds, the file or folder (if any), configurations evaluated."""

    rows: int
    chunks: int
    seconds: float
    path: Path | None = None
    configs: int = 0

    @property
    def configs_per_s(self) -> float:
        return self.configs / self.seconds if self.seconds > 0 else float("inf")


class _Parquet:
    def __init__(self, path: Path):
        self.path, self.writer = path, None

    def write(self, df: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(df, preserve_index=False)
        if self.writer is None:  # dictionary pages for labels only: a float column seldom repeats (and encoding
            # it is most of the write time)
            labels = [f.name for f in table.schema if not pa.types.is_floating(f.type)]
            self.writer = pq.ParquetWriter(self.path, table.schema, use_dictionary=labels)
        elif not table.schema.equals(self.writer.schema):
            table = table.cast(self.writer.schema)
        self.writer.write_table(table)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class _Csv:
    def __init__(self, path: Path):
        self.path, self.first = path, True

    def write(self, df: pd.DataFrame) -> None:
        safe_write.escape_frame(df).to_csv(self.path, mode="w" if self.first else "a", header=self.first,
                                           index=False)
        self.first = False

    def close(self) -> None:
        pass


def _is_dataset(out) -> bool:
    return not callable(out) and out is not None and (str(out).endswith("/") or Path(out).is_dir()
                                                      or not Path(out).suffix)


def _file_sink(out: Path) -> type:
    if out.suffix.lower() in (".parquet", ".pq"):
        return _Parquet
    if out.suffix.lower() == ".csv":
        return _Csv
    raise ValueError(f"sweep output {out.name}: use a .parquet or .csv file name")


_PLANS: dict[bytes, Plan] = {}
WORKER_ENV = {"MALLOC_TRIM_THRESHOLD_": str(1 << 28), "MALLOC_MMAP_THRESHOLD_": str(1 << 26)}


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc malloc.h
# Threads a sweep takes when not told: each holds two chunks in flight (~25 MB of rows each at 65,536 rows) and
# numpy's array loops share the memory bandwidth; measured on 2 CPUs only (a 10M-row returned frame: 1.27M/s on
# one thread, 1.80M/s on two, medians of three fresh processes, 2026-11-27), so larger machines get at most 4
# until measured there.
DEFAULT_WORKERS_MAX = 4


def default_workers() -> int:
    """The threads a sweep uses unless told: the CPUs this process may run on, at most DEFAULT_WORKERS_MAX."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, DEFAULT_WORKERS_MAX))


@functools.lru_cache(maxsize=1)
def steady_allocator() -> bool:
    """WORKER_ENV's malloc thresholds in this process (glibc mallopt), once; False where they cannot be set
    (not glibc) or the environment sets them already (the user's choice stands)."""
    if sys.platform != "linux" or any(k in os.environ for k in WORKER_ENV):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    return bool(libc.mallopt(_M_TRIM_THRESHOLD, int(WORKER_ENV["MALLOC_TRIM_THRESHOLD_"]))
                and libc.mallopt(_M_MMAP_THRESHOLD, int(WORKER_ENV["MALLOC_MMAP_THRESHOLD_"])))


def local_cluster(n_workers: int, **kw):
    """A dask.distributed LocalCluster of `n_workers` processes, 1 thread each, with WORKER_ENV."""
    from perfmodel.core import extras

    dask, LocalCluster = extras.require("dask"), extras.require("dask.distributed").LocalCluster

    env = {**dask.config.get("distributed.nanny.pre-spawn-environ", default={}), **WORKER_ENV}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": env}):
        return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None, **kw)


COLUMNS = object()  # reduce=COLUMNS: a chunk as engine.chunk_columns' dict (a returned frame copies it in)


def _chunk(plan: Plan, reduce, part: Path | None, i: int, g: int, start: int, stop: int):
    """Evaluate one chunk, reduce it, and write it as dataset part i (returning its row count) or return it."""
    if reduce is COLUMNS:
        return chunk_columns(plan, g, start, stop)
    df = evaluate_chunk(plan, g, start, stop)
    if reduce is not None:
        df = reduce(df)
    if part is None:
        return df
    with safe_write.atomic_path(part / f"part-{i:06d}.parquet") as tmp:  # a reader never sees half a part
        df.to_parquet(tmp, index=False, use_dictionary=[c for c in df.columns if df[c].dtype.kind != "f"])
    return len(df)


def _chunk_task(spec: SweepSpec, reduce, part, i: int, g: int, start: int, stop: int):
    """One chunk on a Dask worker: the spec arrives with its resolved records (systems with their calibration,
    workloads), so the worker resolves nothing; the checked plan is kept per worker process."""
    key = pickle.dumps(spec)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) > 16:
            _PLANS.clear()
        plan = _PLANS[key] = spec.plan()
    return _chunk(plan, reduce, part, i, g, start, stop)


def _ordered(submit, tasks, window: int) -> Iterator[pd.DataFrame]:
    """Results of submit(task) in task order, at most `window` in flight."""
    pending: deque = deque()
    for t in tasks:
        pending.append(submit(t))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def frames(spec: SweepSpec | Plan, chunk_size: int = DEFAULT_CHUNK, client=None, workers: int | None = 1,
           window: int | None = None, reduce: Callable | None = None, part: Path | None = None) -> Iterator:
    """The sweep's chunks as DataFrames (row counts when written as dataset parts into `part`), in
    order: in this process (`workers` threads) or on `client`."""
    plan = spec if isinstance(spec, Plan) else spec.plan()
    tasks = ((i, *t) for i, t in enumerate(plan.tasks(chunk_size)))
    if client is not None:
        n = max(len(client.scheduler_info().get("workers", {})), 1)
        spec_f = client.scatter(plan.spec, broadcast=True, hash=False)  # a key of its own: never shared with
        # (and released by) another run of the same spec
        yield from _ordered(lambda t: client.submit(_chunk_task, spec_f, reduce, part, *t, pure=False), tasks,
                            window or 2 * n)
        return
    workers = default_workers() if workers is None else workers
    if workers <= 1:
        for t in tasks:
            yield _chunk(plan, reduce, part, *t)
        return
    from concurrent.futures import ThreadPoolExecutor

    first = next(tasks, None)
    if first is None:
        return
    yield _chunk(plan, reduce, part, *first)  # compiles the graph once, before the threads start
    pool = ThreadPoolExecutor(workers, thread_name_prefix="perfmodel-sweep")
    try:
        yield from _ordered(lambda t: pool.submit(_chunk, plan, reduce, part, *t), tasks, window or 2 * workers)
    finally:  # stopped (an error, Ctrl-C): chunks not started are dropped, the running ones finish
        pool.shutdown(wait=True, cancel_futures=True)


def _progress(progress, total: int):
    """(callback(done), close) for a rich progress bar on stderr, a user callable, or nothing."""
    if callable(progress):
        return (lambda done: progress(done, total)), (lambda: None)
    if not progress:
        return (lambda done: None), (lambda: None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("configurations"),
                   TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    task = bar.add_task("sweep", total=total)
    bar.start()
    return (lambda done: bar.update(task, completed=done)), bar.stop


def run_sweep(spec: SweepSpec | Plan, out: str | Path | Callable | None = None, *, chunk_size: int = DEFAULT_CHUNK,
              progress: bool | Callable = True, client=None, workers: int | None = None, window: int | None = None,
              reduce: Callable[[pd.DataFrame], pd.DataFrame] | None = None) -> pd.DataFrame | SweepRun:
    """Evaluate every configuration of `spec` (see the module doc for sinks, Dask, memory and partial files)."""
    plan = spec if isinstance(spec, Plan) else spec.plan()
    steady_allocator()
    target = None if out is None or callable(out) else Path(out)
    dataset = target is not None and _is_dataset(target)
    if dataset and target.is_dir():
        stale = sorted(target.glob("part-*.parquet"))
        if stale:
            raise ValueError(f"sweep output {target}: holds {len(stale)} part files already; use an empty folder")
    sink_class = _file_sink(target) if target is not None and not dataset else None
    partial = safe_write.PartialTarget(target, folder=dataset).__enter__() if target is not None else None
    part = partial.path if dataset else None
    if workers is None:  # threads unasked only where a chunk's work is the model's alone (module doc)
        workers = 1 if reduce is not None or dataset else default_workers()
    sink = sink_class(partial.path) if sink_class else out if callable(out) else None
    # a returned frame: chunks copied into preallocated columns (peak ~ the frame), unless rows are filtered
    # (fits_only, reduce: the frame may be far smaller than the plan; its chunks are concatenated at the end)
    whole = ColumnsFrame(plan.size) if target is None and sink is None and reduce is None and not plan.spec.fits_only \
        else None
    kept, rows, chunks, done, t0 = [], 0, 0, 0, time.perf_counter()
    update, close_bar = _progress(False, plan.size)  # no bar until inside the try, which stops it
    try:
        update, close_bar = _progress(progress, plan.size)
        how = COLUMNS if whole is not None and client is None else reduce  # no DataFrame per chunk
        for (_, start, stop), df in zip(plan.tasks(chunk_size),
                                        frames(plan, chunk_size, client, workers, window, how, part)):
            n = df if part is not None else stop - start if how is COLUMNS else len(df)
            if whole is not None:
                whole.add(df)
            elif part is None and sink is None:
                kept.append(df)
            elif callable(sink):
                sink(df)
            elif sink is not None:
                sink.write(df)
            rows, chunks, done = rows + n, chunks + 1, done + stop - start
            update(done)
        close_bar()
        if partial is not None:
            if sink_class:
                sink.close()
            partial.commit()  # the only moment `out` changes: complete, in one rename
    except BaseException as exc:  # KeyboardInterrupt too: the file must say it is partial
        close_bar()
        if whole is not None:
            whole.close()
        if partial is not None:
            with suppress(Exception):
                if sink_class:
                    sink.close()  # a Parquet file gets its footer: the rows done stay readable
            partial.abort(keep=chunks > 0)
            print(_stopped(exc, partial, rows, done, plan.size), file=sys.stderr)
        raise
    seconds = time.perf_counter() - t0
    if whole is not None:
        return whole.frame() if whole.order else pd.DataFrame()
    if sink is None and part is None:
        return pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()
    return SweepRun(rows=rows, chunks=chunks, seconds=seconds, path=target, configs=done)


def _stopped(exc: BaseException, partial: safe_write.PartialTarget, rows: int, done: int, total: int) -> str:
    """The one line saying where an unfinished sweep's rows are (the target is never touched)."""
    how = "interrupted" if isinstance(exc, KeyboardInterrupt) else "stopped by an error"
    head = f"sweep {how} after {done:,} of {total:,} configurations"
    if partial.path.exists():
        return f"{head}: the {rows:,} rows done are in {partial.path} (partial); {partial.target} is left as it was"
    return f"{head}: no rows written; {partial.target} is left as it was"
