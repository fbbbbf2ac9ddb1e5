"""The clients' surface against the server's OpenAPI document, and against each other.

Guards against a server operation that no client method calls and that nobody decided
to leave out (``punctual.operations`` says, for each, which methods call it or why none
does), and against an ``AsyncClient`` whose methods drift from ``Client``'s.
"""
from __future__ import annotations

import inspect
from typing import Set

import httpx

import punctual
from conftest import Server
from punctual.operations import NOT_OFFERED, OFFERED

METHODS = ("get", "put", "post", "patch", "delete")
# Neither talks to the server: the life cycle of each client's connection pool.
OWN_METHODS = {"close", "with_transport", "aclose"}


def server_operations(server: Server) -> Set[str]:
    document = httpx.get(server.url + "/openapi.json", timeout=10).json()
    return {f"{method.upper()} {path}" for path, item in document["paths"].items()
            for method in item if method in METHODS}


def test_every_operation_of_the_server_is_offered_or_declined(server: Server) -> None:
    operations = server_operations(server)
    assert not OFFERED.keys() & NOT_OFFERED.keys()
    unknown = operations - OFFERED.keys() - NOT_OFFERED.keys()
    assert not unknown, f"the server has operations this client neither offers nor declines: {sorted(unknown)}"
    stale = (OFFERED.keys() | NOT_OFFERED.keys()) - operations
    assert not stale, f"punctual.operations names operations the server does not have: {sorted(stale)}"


def test_every_offered_method_is_on_both_clients() -> None:
    for operation, names in OFFERED.items():
        for name in names:
            assert callable(getattr(punctual.Client, name, None)), (operation, name)
            method = getattr(punctual.AsyncClient, name, None)
            assert inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method), (operation, name)


def public_methods(cls: type) -> Set[str]:
    return {name for name, _ in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_")} - OWN_METHODS


def test_the_async_client_has_the_sync_clients_methods_with_the_same_parameters() -> None:
    assert public_methods(punctual.Client) == public_methods(punctual.AsyncClient)
    offered = {name for names in OFFERED.values() for name in names}
    assert public_methods(punctual.Client) == offered, "a method that calls no operation?"
    for name in public_methods(punctual.Client):
        sync = inspect.signature(getattr(punctual.Client, name))
        aio = inspect.signature(getattr(punctual.AsyncClient, name))
        assert sync.parameters == aio.parameters, name
