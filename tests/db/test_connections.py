"""A database server that cannot be reached, or refuses memstore, is named in the error:
which user, which database, which host and port, and never the password."""

from __future__ import annotations

import socket

import pytest
from clients import memstore_cli
from conftest import POSTGRES_URL
from sqlalchemy.engine import make_url

from memstore import ConnectionFailedError, MemoryStore, StorageError
from memstore.db.driver_errors import connection_failure

SECRET = "hunter2-not-to-be-shown"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_url(**parts: object) -> str:
    if not POSTGRES_URL:
        pytest.skip("PostgreSQL variant: set MEMSTORE_TEST_POSTGRES_URL (.ci/run starts a cluster)")
    return make_url(POSTGRES_URL).set(**parts).render_as_string(hide_password=False)


async def refused(url: str) -> ConnectionFailedError:
    with pytest.raises(ConnectionFailedError) as info:
        async with MemoryStore.open(url):
            pass
    assert SECRET not in str(info.value) and SECRET not in repr(info.value.__cause__)
    return info.value


async def test_nothing_listening_names_host_and_port() -> None:
    port = free_port()
    error = await refused(f"postgresql+asyncpg://memstore:{SECRET}@127.0.0.1:{port}/agents")
    assert str(error) == f"nothing is listening on 127.0.0.1:{port} (connection refused)"
    assert (error.host, error.port, error.database, error.user) == (
        "127.0.0.1", port, "agents", "memstore",
    )  # fmt: skip


async def test_a_missing_database_is_named() -> None:
    error = await refused(server_url(database="no_such_database", password=SECRET))
    assert "database 'no_such_database' does not exist on 127.0.0.1:" in str(error)


async def test_an_unknown_user_is_named() -> None:
    error = await refused(server_url(username="nobody_here", password=SECRET))
    assert "refused user 'nobody_here'" in str(error)


@pytest.mark.parametrize("driver", ["postgresql+asyncpg", "postgresql+psycopg"])
async def test_both_drivers_say_the_same(driver: str) -> None:
    port = free_port()
    error = await refused(f"{driver}://u:{SECRET}@127.0.0.1:{port}/d")
    assert "nothing is listening" in str(error)


def test_a_failed_password_names_the_user_not_the_password() -> None:
    class AuthError(Exception):
        sqlstate = "28P01"

    url = make_url(f"postgresql+asyncpg://alice:{SECRET}@db.internal:6543/agents")
    error = connection_failure(AuthError(f"password authentication failed ({SECRET})"), url)
    assert str(error) == "authentication failed for user 'alice' on db.internal:6543"
    assert isinstance(error, StorageError)


def test_the_cli_says_it_in_one_line() -> None:
    port = free_port()
    url = f"postgresql://memstore:{SECRET}@127.0.0.1:{port}/agents"
    result = memstore_cli(url, "sessions")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"Error: nothing is listening on 127.0.0.1:{port} (connection refused)"
    ]
    assert SECRET not in result.stdout + result.stderr
