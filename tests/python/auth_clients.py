"""Clients logging in to a tarn started with --auth scram-sha-256 and --tls-required (see
tests/auth.rs, which starts it and creates the roles alice/'wonder land' and dave).

- psycopg 3 over sslmode=verify-full with the test CA;
- psql's \\password, typed at a terminal (a pty), as a user does it: psql computes the
  SCRAM verifier itself and sends `ALTER USER ... PASSWORD '<verifier>'`;
- the new password logs in, the old one no longer does.
"""

import os
import pty
import select
import subprocess
import sys
import time

import psycopg

PORT = int(os.environ["TARN_PORT"])
CA = os.environ["TARN_CA"]
CONNINFO = f"host=127.0.0.1 port={PORT} dbname=tarn sslmode=verify-full sslrootcert={CA}"


def connect(user, password):
    return psycopg.connect(f"{CONNINFO} user={user} password='{password}'", autocommit=True)


def check_psycopg():
    with connect("alice", "wonder land") as conn:
        row = conn.execute("SELECT current_user, 41 + 1").fetchone()
        assert row == ("alice", 42), row
        assert conn.info.pgconn.ssl_in_use, "psycopg's connection uses TLS"
    try:
        connect("alice", "not it")
    except psycopg.OperationalError as e:
        assert "password authentication failed" in str(e), e
    else:
        raise AssertionError("a wrong password logged in")


# psql's prompt: `tarn=>`, or `tarn=#` for a superuser.
PROMPT = (b"tarn=>", b"tarn=#")


def read_until(fd, marker, timeout=20.0):
    """Reads the terminal until `marker` (bytes, or a tuple of alternatives) shows."""
    markers = marker if isinstance(marker, tuple) else (marker,)
    seen = b""
    deadline = time.time() + timeout
    while not any(m in seen for m in markers):
        remaining = deadline - time.time()
        if remaining <= 0:
            raise AssertionError(f"psql did not print {marker!r}; got {seen!r}")
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                chunk = os.read(fd, 1024)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def check_psql_password_command():
    pid, fd = pty.fork()
    if pid == 0:
        env = dict(os.environ, PGPASSWORD="wonder land")
        os.execvpe(
            "psql",
            ["psql", "-X", f"{CONNINFO} user=alice"],
            env,
        )
    read_until(fd, PROMPT)
    os.write(fd, b"\\password dave\n")
    read_until(fd, b"Enter new password")
    os.write(fd, b"typed at a tty\n")
    read_until(fd, b"Enter it again")
    os.write(fd, b"typed at a tty\n")
    out = read_until(fd, PROMPT)
    assert b"ERROR" not in out, out
    os.write(fd, b"\\q\n")
    os.waitpid(pid, 0)
    with connect("dave", "typed at a tty") as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("dave",)


def check_verifier_is_what_psql_sent():
    # The verifier psql made is kept as it was sent: logging in with psql again works too.
    out = subprocess.run(
        ["psql", "-X", "-At", f"{CONNINFO} user=dave", "-c", "SELECT 7"],
        env=dict(os.environ, PGPASSWORD="typed at a tty"),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and out.stdout.strip() == "7", out


if __name__ == "__main__":
    check_psycopg()
    check_psql_password_command()
    check_verifier_is_what_psql_sent()
    print("auth clients: ok")
    sys.exit(0)
