"""The shared frame of the client checks: each check is a function; `run()` calls them in
order and prints one line per check, `ok NAME` or `FAIL NAME: why`, which tests/clients.rs
reads. A script that crashes outside a check fails the whole client.

The connection comes from libpq's environment (PGHOST, PGPORT, PGUSER, PGDATABASE); the same
script runs against tarn and against PostgreSQL 15 (CLIENT_TARGET says which, for messages).
"""

import os
import traceback

HOST = os.environ["PGHOST"]
PORT = int(os.environ["PGPORT"])
USER = os.environ["PGUSER"]
DATABASE = os.environ["PGDATABASE"]
TARGET = os.environ.get("CLIENT_TARGET", "?")
CONNINFO = f"host={HOST} port={PORT} user={USER} dbname={DATABASE}"
URL_TAIL = f"{USER}@{HOST}:{PORT}/{DATABASE}"

_checks = []


def check(fn):
    _checks.append(fn)
    return fn


def name(base):
    """A table name of this run (checks against one server may run more than once)."""
    return f"{base}_{os.getpid()}"


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def run():
    for fn in _checks:
        try:
            fn()
            print(f"ok {fn.__name__}", flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the rest
            text = " ".join(str(e).split())[:300]
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {text}", flush=True)
            if os.environ.get("CLIENT_TRACE"):
                traceback.print_exc()
