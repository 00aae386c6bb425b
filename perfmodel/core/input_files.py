"""Every file a command reads, read one way: bounded, text as people save it, and remembered.

    read_text(path, what)   the file's text: a regular file (not a device, FIFO or socket, which could block or
                            never end), at most MAX_INPUT_BYTES, no line longer than MAX_LINE_CHARS, UTF-8 with or
                            without a byte-order mark; anything else is an InputError (one line naming the file
                            and what was found: "UTF-16 (byte-order mark)", the first byte that is not UTF-8)
    read_toml(path, what)   the same, parsed as TOML (data only); a nesting too deep to parse names the file
    read_csv(path, what)    the same, parsed by pandas (keyword arguments passed on)
    was_read(path)          whether the current command (since forget(); else this process) read `path` through
                            here: safe_write refuses to write a command's output over a file the command read
                            (--force included)

A file is checked by os.stat before it is opened, so /dev/zero, a FIFO or a terminal is refused at once instead of
read forever or waited on. The size cap is far above any real input (a million-request trace is ~50 MB).

Must not import: any other perfmodel package (core).
"""

from __future__ import annotations

import codecs
import io
import os
import stat
import tomllib
from pathlib import Path

MAX_INPUT_BYTES = 512 * 2**20  # an input file larger than this is refused, not read
MAX_LINE_CHARS = 2**20  # a "line" longer than this is a binary file or a runaway field

_READ: set[str] = set()  # every path read through here in this process (resolved)
_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF16_LE, "UTF-16"),
         (codecs.BOM_UTF16_BE, "UTF-16"))


class InputError(ValueError):
    """An input file that cannot be read as text (one line, naming the file)."""


def _key(path) -> str:
    return os.path.realpath(path)


def was_read(path) -> bool:
    return _key(path) in _READ


def forget() -> set[str]:
    """Start a new command's record of what it read; returns the previous record (to restore after it)."""
    global _READ
    saved, _READ = _READ, set()
    return saved


def restore(saved: set[str]) -> None:
    global _READ
    _READ = saved


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path, what: str = "file") -> bytes:
    """The bytes of a regular file of at most MAX_INPUT_BYTES (InputError otherwise)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError as exc:
        raise InputError(f"{p}: cannot read {what}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{p}: cannot read {what}: it is {_kind(st.st_mode)}; give a regular file")
    if st.st_size > MAX_INPUT_BYTES:
        raise InputError(f"{p}: cannot read {what}: {st.st_size / 2**20:,.0f} MiB is above the "
                         f"{MAX_INPUT_BYTES // 2**20} MiB an input may be")
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{p}: cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > MAX_INPUT_BYTES:  # grew while read
        raise InputError(f"{p}: cannot read {what}: more than {MAX_INPUT_BYTES // 2**20} MiB")
    _READ.add(_key(p))
    return data


def read_text(path, what: str = "file") -> str:
    """The text of a UTF-8 file (a byte-order mark dropped); InputError naming another encoding."""
    data = read_bytes(path, what)
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise InputError(f"{path}: cannot read {what}: it is {name} (byte-order mark); save it as UTF-8")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: cannot read {what}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                         f"{exc.start}; a Windows-1252 or Latin-1 file?); save it as UTF-8") from None
    for n, line in enumerate(io.StringIO(text), start=1):
        if len(line) > MAX_LINE_CHARS:
            raise InputError(f"{path}: cannot read {what}: line {n} is {len(line):,} characters (at most "
                             f"{MAX_LINE_CHARS:,}); not a text file?")
    return text


def read_toml(path, what: str = "TOML file") -> dict:
    """A TOML file's data; InputError naming the file on bad text, bad TOML or a nesting too deep to parse."""
    text = read_text(path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: malformed TOML: {exc}") from None
    except RecursionError:
        raise InputError(f"{path}: malformed TOML: nested too deeply to parse (tables or arrays inside each other "
                         f"hundreds of levels deep)") from None


def read_csv(path, what: str = "CSV file", **kwargs):
    """A CSV file as a DataFrame (pandas.read_csv on the checked text; keyword arguments passed on)."""
    import pandas as pd

    return pd.read_csv(io.StringIO(read_text(path, what)), **kwargs)
