"""What every part of the store shares: the connection and its transactions.

:class:`~rankstore.store.Store` holds the connection and its transactions.  Each part (:mod:`.pages`,
:mod:`.graph`, :mod:`.rankings`, ...) is a :class:`Part`: it holds the store,
speaks SQL on the store's connection, and reaches another part through the
store (``self.store.graph``), never by inheriting it.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import Store

__all__ = ["Part", "Transaction"]


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
            if exc_type is None:
                self.db.execute("COMMIT")
            elif self.db.in_transaction:  # SQLite rolls some errors back itself (a full disk: SQLITE_FULL)
                self.db.execute("ROLLBACK")


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
