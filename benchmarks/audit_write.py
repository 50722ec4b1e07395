"""µs per audit row for each way of writing it, at the driver (PostgreSQL).

    .venv/bin/python benchmarks/audit_write.py [--rows 2000]

One connection (psycopg, autocommit, prepared statements) writes rows shaped
like the audit's into a scratch table of the ``postgres`` database at
127.0.0.1:5432, which it drops after: one INSERT per commit as today
(durable), the same with ``synchronous_commit`` off through ``SET LOCAL``
(four statements), through ``set_config`` in the INSERT's ``RETURNING``
(one) and through a connection opened with it off, and grouped writes of
10 and 50 rows per commit (``executemany``, ``COPY``), which a queue
flushed from a thread would make. Wall time, best of ``--repeats``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import psycopg
from psycopg.types.json import Jsonb

SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
TABLE = "bench_audit_write"
INSERT = (
    f"INSERT INTO {TABLE} (tool, duration, arguments, at) VALUES (%s, %s, %s, now())"  # noqa: S608
)
ASYNC = " RETURNING set_config('synchronous_commit', 'off', true)"
ROW = ("demo_echo", 1, Jsonb({"text": "hello"}))


def best_us(
    write: Callable[[], object], rows: int, per_write: int, repeats: int
) -> float:
    for _ in range(max(1, 100 // per_write)):
        write()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(rows // per_write):
            write()
        best = min(best, (time.perf_counter() - started) / rows * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    conn = psycopg.connect(SERVER, autocommit=True, prepare_threshold=0)
    off = psycopg.connect(
        SERVER + "?options=-c%20synchronous_commit%3Doff",
        autocommit=True,
        prepare_threshold=0,
    )
    conn.execute(f"DROP TABLE IF EXISTS {TABLE}", prepare=False)
    conn.execute(
        f"CREATE TABLE {TABLE} (id bigserial PRIMARY KEY, tool text, "
        "duration int, arguments jsonb, at timestamptz)",
        prepare=False,
    )

    def set_local() -> None:
        with conn.transaction():
            conn.execute("SET LOCAL synchronous_commit TO OFF", prepare=False)
            conn.execute(INSERT, ROW)

    def grouped(size: int) -> Callable[[], None]:
        def write() -> None:
            with conn.cursor() as cursor:
                cursor.executemany(INSERT, [ROW] * size)

        return write

    def copied(size: int) -> Callable[[], None]:
        def write() -> None:
            columns = "(tool, duration, arguments, at)"
            with (
                conn.cursor() as cursor,
                cursor.copy(f"COPY {TABLE} {columns} FROM STDIN") as copy,
            ):
                for _ in range(size):
                    copy.write_row(("demo_echo", 1, '{"text":"hello"}', "now"))

        return write

    ways: list[tuple[str, Callable[[], object], int]] = [
        (
            "durable: one INSERT per commit",
            lambda: conn.execute(INSERT, ROW),
            1,
        ),
        ("async: BEGIN; SET LOCAL; INSERT; COMMIT", set_local, 1),
        (
            "async: INSERT … RETURNING set_config(…)",
            lambda: conn.execute(INSERT + ASYNC, ROW),
            1,
        ),
        (
            "async: a connection with it off",
            lambda: off.execute(INSERT, ROW),
            1,
        ),
        ("grouped: executemany of 10 per commit", grouped(10), 10),
        ("grouped: executemany of 50 per commit", grouped(50), 50),
        ("grouped: COPY of 10 per commit", copied(10), 10),
        ("grouped: COPY of 50 per commit", copied(50), 50),
    ]
    print("| write | µs per row |\n|---|---:|")
    try:
        for name, write, size in ways:
            print(f"| {name} | {best_us(write, args.rows, size, args.repeats):,.1f} |")
    finally:
        conn.execute(f"DROP TABLE {TABLE}", prepare=False)
        conn.close()
        off.close()


if __name__ == "__main__":
    main()
