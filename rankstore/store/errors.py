"""The store's own errors, and SQLite's errors told as what they mean for a store.

Every message names the store's path and the real cause (a missing folder is
not "not a rankstore database"), in one line that a command line can print
as it is.
"""

from __future__ import annotations

import errno
import os

__all__ = [
    "StoreError",
    "RankingNotFound",
    "NotAStore",
    "StoreMissing",
    "StoreBusy",
    "StoreReadOnly",
    "StoreFull",
    "StoreDamaged",
    "explain",
    "check_path",
]


class StoreError(Exception):
    """A store that cannot be opened or used."""


class RankingNotFound(StoreError):
    """No ranking of that name in the store."""


class NotAStore(StoreError):
    """The file is not a rankstore store (not SQLite, or SQLite without rankstore's tables)."""


class StoreMissing(StoreError):
    """No store at that path, or no folder to create it in."""


class StoreBusy(StoreError):
    """Another process holds the store's write lock for longer than the busy timeout."""


class StoreReadOnly(StoreError):
    """The store (or its folder) cannot be written by this process."""


class StoreFull(StoreError):
    """The disk filled up while writing; the interrupted transaction left nothing behind."""


class StoreDamaged(StoreError):
    """SQLite found the file corrupt."""


def _writable_folder(path: str) -> bool:
    return os.access(os.path.dirname(os.path.abspath(path)) or ".", os.W_OK)


def check_path(path: str, create: bool) -> None:
    """Raise the error a store at ``path`` would meet before SQLite is asked (which says only "unable to open")."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.stat(path)
    except PermissionError:
        raise StoreReadOnly(
            f"{path}: no permission to reach the store (a folder on the way cannot be entered)"
        ) from None
    except (FileNotFoundError, NotADirectoryError):
        pass
    if os.path.isdir(path):
        raise StoreMissing(f"{path}: is a folder, not a store file")
    if not os.path.exists(path):
        if not create:
            raise StoreMissing(f"{path}: no such store (run `rankstore build` first)")
        if not os.path.isdir(folder):
            raise StoreMissing(f"{path}: cannot create the store: no such folder {folder}")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise StoreReadOnly(f"{path}: cannot create the store: no permission to write in {folder}")
    elif not os.access(path, os.R_OK):
        raise StoreReadOnly(f"{path}: no permission to read the store")


def explain(path: str, error: BaseException) -> StoreError:
    """A StoreError that says what ``error`` (from SQLite or the OS, on store ``path``) means."""
    if isinstance(error, StoreError):
        return error
    if isinstance(error, OSError):
        if error.errno == errno.ENOSPC:
            return StoreFull(f"{path}: the disk is full ({error.strerror}); free some space and run the command again")
        if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return StoreReadOnly(f"{path}: {error.strerror}")
        return StoreError(f"{path}: {error.strerror or error}")
    name = getattr(error, "sqlite_errorname", "") or ""
    text = str(error)
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return StoreFull(
            f"{path}: the disk is full; the interrupted transaction was rolled back, the store is as "
            "it was before it: free some space and run the command again"
        )
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
        return StoreBusy(
            f"{path}: the store is busy: another process is writing it (a build or rank); "
            "try again when it is done, or raise $RANKSTORE_BUSY_TIMEOUT (seconds)"
        )
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        where = "its folder" if not _writable_folder(path) else "the file"
        return StoreReadOnly(
            f"{path}: the store is read-only ({where} cannot be written by this user, or the file "
            "is immutable); this command writes to it"
        )
    if name.startswith("SQLITE_NOTADB") or "not a database" in text:
        return NotAStore(f"{path}: not a rankstore store (not a SQLite database)")
    if name.startswith("SQLITE_CORRUPT") or "malformed" in text:
        return StoreDamaged(
            f"{path}: the store is damaged ({text}); rebuild it, or recover it with `sqlite3 STORE .recover`"
        )
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        if not _writable_folder(path):
            return StoreReadOnly(
                f"{path}: cannot open the store: its folder cannot be written by this user "
                "(SQLite needs to write its -wal and -shm files beside it)"
            )
        return StoreError(f"{path}: cannot open the store ({text})")
    if name.startswith("SQLITE_IOERR") or "disk I/O error" in text:
        return StoreError(f"{path}: disk I/O error ({text}); check the disk and its free space")
    return StoreError(f"{path}: {text}")
