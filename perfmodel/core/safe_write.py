"""Files written for a user: complete or not there at all, never a live spreadsheet formula.

    with atomic_path("r.xlsx") as tmp: ...        # write tmp; renamed onto r.xlsx only if the block ends cleanly
    write_text("r.csv", text)                     # the same for text and bytes
    with PartialTarget("r.parquet") as t: ...     # long writes (sweeps): rows go to r.partial.parquet, locked;
        t.commit()                                # renamed onto r.parquet when complete, else left marked partial
    escape_frame(df)                              # text cells starting = + - @ tab CR get a leading '

A temporary file sits beside its target (same folder, so os.replace is one atomic rename on the
same file system), is named `.<name>.tmp-<random><suffix>` (hidden, and Parquet readers skip names
starting with '.') and is removed if writing fails: an existing file is either replaced whole or
left as it was. Two writers of one path each write their own temporary file; the last rename wins
and leaves a complete file.

A sweep writes for minutes, so its file is `<stem>.partial<suffix>` (a folder `<name>.partial`
for a Parquet dataset) while it runs: a name that says it is incomplete. The writer holds an
exclusive flock on it, so a second sweep to the same path is refused at once instead of
interleaving its rows into the same file; the kernel releases the lock when the process dies,
so an interrupted run never leaves a stale lock (its partial file is reused by the next run).
flock is advisory and local: writers on other machines sharing a network file system are not
serialised.

Inside a command (command_scope, set by the CLI) an output never replaces a file the command read (scenario,
demand, trace, measurement, calibration and catalogue files: core/input_files remembers them), an existing
catalogue file, or another output of the same command; and never a path that is not a regular file (a device,
a FIFO, a socket: renaming over it would destroy it), inside a command or not.

Spreadsheet formula injection (OWASP "CSV injection"): a text cell starting with = + - @, tab or
carriage return is read as a formula by Excel, LibreOffice and Sheets; such cells are written
with a leading single quote, which those programs show as text. Numbers are never touched, nor
text that is a plain number ('-5', '+1e3': it cannot hold a formula).
Must not import: any other perfmodel package (core).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class OutputError(ValueError):
    """An output that cannot or may not be written (one line, naming the file)."""


def temp_path(path: str | Path) -> Path:
    """A fresh hidden name beside `path` that keeps its suffix (writers pick formats by suffix)."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}{path.suffix}")


_SCOPE: dict | None = None  # inside a command (command_scope): what it protects and what it has written


@contextmanager
def command_scope(protected=(), allowed=()) -> Iterator[None]:
    """Inside the block (one CLI command) an output may not replace: a file the process read as an input
    (core/input_files), an existing file under a `protected` folder (the catalogue) unless under an `allowed`
    one, or a path the command already wrote (two outputs of one command to one path)."""
    from perfmodel.core import input_files  # core: same package

    global _SCOPE
    saved, reads = _SCOPE, input_files.forget()  # what this command reads, from here
    _SCOPE = {"protected": [os.path.realpath(p) for p in protected],
              "allowed": [os.path.realpath(p) for p in allowed], "written": set()}
    try:
        yield
    finally:
        _SCOPE = saved
        input_files.restore(reads)


def _under(path: str, roots) -> bool:
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def _check_folder(path: Path) -> None:
    """Refuse (OutputError, one line) an output path that cannot or may not be written (module doc)."""
    parent = path.parent
    if not parent.is_dir():
        raise OutputError(f"{path}: cannot write: folder {parent} does not exist")
    if path.is_dir():
        raise OutputError(f"{path}: is a folder; give a file name")
    if os.path.lexists(path) and not path.is_file():  # a device, FIFO, socket or dangling link: never renamed over
        raise OutputError(f"{path}: is not a regular file (a device, FIFO, socket or broken link); perfmodel "
                          "replaces only regular files: choose another path")
    if _SCOPE is None:
        return
    from perfmodel.core import input_files  # core: same package

    real = os.path.realpath(path)
    if input_files.was_read(path):
        raise OutputError(f"{path}: is an input this command read; writing the output there would replace it "
                          "(--force included): choose another path")
    if path.exists() and _under(real, _SCOPE["protected"]) and not _under(real, _SCOPE["allowed"]):
        raise OutputError(f"{path}: is a catalogue file; an output never replaces one (--force included): choose "
                          "another path")
    if real in _SCOPE["written"]:
        raise OutputError(f"{path}: this command already writes another of its outputs there: give each output "
                          "its own path")
    _SCOPE["written"].add(real)


@contextmanager
def atomic_path(path: str | Path, user_output: bool = True) -> Iterator[Path]:
    """A temporary path beside `path`, renamed onto it when the block ends without error, removed otherwise.
    user_output=False: perfmodel's own file (a cache entry), exempt from a command's output rules."""
    path = Path(path)
    if user_output:
        _check_folder(path)
    elif not path.parent.is_dir():
        raise OutputError(f"{path}: cannot write: folder {path.parent} does not exist")
    tmp = temp_path(path)
    try:
        # O_EXCL reserves the name; mode 0o666 lets the umask give the file its usual permissions
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as exc:  # permission, read-only file system, ...: name the target, not the temporary file
        raise OutputError(f"{path}: cannot write in {path.parent}: {exc.strerror}") from None
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: str | Path, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_bytes(path: str | Path, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def partial_path(target: str | Path, folder: bool = False) -> Path:
    """Where a long write goes until complete: r.parquet -> r.partial.parquet; folder results -> results.partial."""
    target = Path(target)
    if folder:
        return target.with_name(f"{target.name}.partial")
    return target.with_name(f"{target.stem}.partial{target.suffix}")


class PartialTarget:
    """A long write (a sweep): locked `partial_path`, renamed onto `target` by commit(); see the module doc."""

    def __init__(self, target: str | Path, folder: bool = False):
        self.target, self.folder = Path(target), folder
        self.path = partial_path(self.target, folder)
        self._fd: int | None = None

    def __enter__(self) -> PartialTarget:
        import fcntl

        if not self.folder and self.target.parent.is_dir():
            _check_folder(self.target)

        if not self.target.parent.is_dir():
            if not self.folder:
                raise OutputError(f"{self.target}: cannot write: folder {self.target.parent} does not exist")
            self.target.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):  # a writer finishing between our open and our lock renames the path away: try again
            try:
                if self.folder:
                    self.path.mkdir(exist_ok=True)
                    fd = os.open(self.path, os.O_RDONLY)
                else:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)  # no O_TRUNC before the lock is ours
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise OutputError(f"{self.target}: another sweep is writing it ({self.path.name} is locked); wait "
                                  "for it to finish or choose another path") from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                break
            os.close(fd)
        else:
            raise OutputError(f"{self.target}: other sweeps keep writing it; choose another path")
        self._clear()  # what an interrupted run left here: this run starts afresh
        return self

    def _clear(self) -> None:
        if not self.folder:
            os.ftruncate(self._fd, 0)
            return
        for p in self.path.iterdir():
            if p.name.startswith(("part-", ".part-")) and p.is_file():
                p.unlink()

    def commit(self) -> None:
        """Move the complete output onto the target (a dataset's parts into an existing target folder)."""
        if self.folder and self.target.is_dir():
            for p in sorted(self.path.iterdir()):
                os.replace(p, self.target / p.name)
            os.rmdir(self.path)
        else:
            os.replace(self.path, self.target)
        self._release()

    def abort(self, keep: bool) -> None:
        """Leave the partial output marked as such (keep) or remove it (nothing worth keeping)."""
        if not keep:
            with suppress(OSError):
                if self.folder:
                    for p in self.path.iterdir():
                        p.unlink()
                    os.rmdir(self.path)
                else:
                    os.unlink(self.path)
        self._release()

    def _release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __exit__(self, *exc) -> None:
        if self._fd is not None:  # neither committed nor aborted: keep whatever was written, marked partial
            self.abort(keep=True)


def _plain_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def escape_formula(value):
    """"'=cmd()" for "=cmd()": a text cell a spreadsheet would run as a formula, made text; anything else as is."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _plain_number(value):
        return "'" + value
    return value


def escape_frame(df):
    """A copy of `df` whose text cells and column names are escaped (escape_formula); numeric columns untouched."""
    import pandas as pd

    out = df.copy(deep=False)
    for i in range(out.shape[1]):  # by position: column names may repeat
        s = out.iloc[:, i]
        if isinstance(s.dtype, pd.CategoricalDtype):
            out.isetitem(i, s.cat.rename_categories(escape_formula))  # a prefix keeps categories distinct
        elif s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            out.isetitem(i, s.map(escape_formula))
    out.columns = [escape_formula(c) for c in out.columns]
    return out
