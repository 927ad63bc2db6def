"""What every part of the store shares: the connection and its transactions.

:class:`StoreBase` holds the connection and its transactions;
:class:`~rankstore.store.Store` opens it.  Each part (:mod:`.pages`,
:mod:`.graph`, :mod:`.rankings`, ...) is a :class:`Part`: it holds the store,
speaks SQL on the store's connection, and reaches another part through the
store (``self.store.graph``), never by inheriting it.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import Store

__all__ = ["Part", "StoreBase", "Transaction"]


class Transaction:
    """``begin`` ... COMMIT, or ROLLBACK on an exception; inside another transaction, part of that one."""

    def __init__(self, db: sqlite3.Connection, begin: str):
        self.db = db
        self.begin = begin
        self.outer = False

    def __enter__(self) -> sqlite3.Connection:
        self.outer = not self.db.in_transaction
        if self.outer:
            self.db.execute(self.begin)
        return self.db

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.outer:
            self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")


class StoreBase:
    db: sqlite3.Connection
    path: str
    readonly: bool

    def reader(self) -> sqlite3.Connection:
        """Another read-only connection to the store's file, for reading in a thread of its own."""
        raise NotImplementedError

    def transaction(self) -> Transaction:
        """A write transaction (BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on an exception)."""
        return Transaction(self.db, "BEGIN IMMEDIATE")

    def snapshot(self) -> Transaction:
        """A read transaction: every query inside sees one version of the store."""
        return Transaction(self.db, "BEGIN")

    def data_version(self) -> int:
        """SQLite's ``data_version``: it moves with every commit another connection makes to the store.

        Asked of SQLite, never read from the ``-shm`` file: opening and closing
        that file would drop every POSIX lock the process holds on it (SQLite's
        among them), and another process would then take the store for its own.
        """
        return self.db.execute("PRAGMA data_version").fetchone()[0]

    def begin_read(self) -> bool:
        """Begin a read transaction unless one is open (a reader's that spans several calls, ended by
        :meth:`end_read`); whether it began one."""
        if self.db.in_transaction:
            return False
        self.db.execute("BEGIN")
        return True

    def end_read(self) -> None:
        """End the read transaction :meth:`begin_read` began."""
        self.db.execute("COMMIT")


class Part:
    """One part of a :class:`~rankstore.store.Store` (as sqlite-utils' ``Table`` of its ``Database``): it holds
    the store, whose connection it speaks to and whose other parts it asks."""

    def __init__(self, store: Store):
        self.store = store

    @property
    def db(self) -> sqlite3.Connection:
        return self.store.db

    def transaction(self) -> Transaction:
        return self.store.transaction()

    def snapshot(self) -> Transaction:
        return self.store.snapshot()
