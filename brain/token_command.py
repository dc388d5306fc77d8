"""``brain token create | list | rotate | revoke | delete | reopen``: manage API tokens
in BRAIN_DATABASE_URL."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime, timedelta

from brain.config import Settings
from brain.db.engine import make_engine, make_session_factory
from brain.domain import utcnow
from brain.errors import BrainError
from brain.names import check_name
from brain.services.tokens import (
    TokenScope,
    create_token,
    delete_token,
    list_tokens,
    reopen_loopback,
    revoke_token,
    rotate_token,
)

DURATION = re.compile(r"^(\d+)([dhm])$")
UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def add_parser(commands) -> None:
    token = commands.add_parser(
        "token",
        help="create, list, rotate, revoke and delete API tokens",
        description="API tokens for the REST API (`Authorization: Bearer <token>`). Only a "
        "hash of each secret is stored: the secret is printed once, at creation.",
    )
    actions = token.add_subparsers(title="token commands", metavar="TOKEN_COMMAND", required=True)
    token.set_defaults(needs_database=True)

    create = actions.add_parser(
        "create",
        help="create a token and print its secret (once)",
        description="Create a token. Scopes: read (GETs, portraits, suggestions), write "
        "(also jobs, samples, events, optimize, plan status), admin (everything). The secret "
        "goes to stdout, alone on its line; keep it, it cannot be shown again.",
    )
    create.add_argument("--name", required=True, help="unique name, e.g. the job master's")
    create.add_argument("--scope", required=True, choices=[s.value for s in TokenScope])
    create.add_argument(
        "--namespace",
        action="append",
        dest="namespaces",
        metavar="NS",
        help="only jobs in this namespace (repeat for several); others answer 404",
    )
    create.add_argument(
        "--expires",
        type=_expiry,
        help="lifetime such as 90d, 12h, 30m, or an RFC 3339 time (default: never)",
    )
    create.set_defaults(handler=_create)

    listing = actions.add_parser("list", help="list tokens (never their secrets)")
    listing.set_defaults(handler=_list)

    rotate = actions.add_parser(
        "rotate",
        help="give a token a new secret (printed once); the old one stops working",
        description="Replace a token's secret. Name, scope and namespaces stay; a token "
        "that expires gets its lifetime again from now. The old secret stops working at "
        "once, in every running server from its next request. The new secret goes to "
        "stdout, alone on its line.",
    )
    rotate.add_argument("name")
    rotate.set_defaults(handler=_rotate)

    revoke = actions.add_parser(
        "revoke",
        help="revoke a token by name (it stays listed as revoked)",
        description="Revoke a token: every running server refuses it from its next "
        "request, and it stays listed, so you can see who had access until when. Delete "
        "it to reuse its name.",
    )
    revoke.add_argument("name")
    revoke.set_defaults(handler=_revoke)

    delete = actions.add_parser(
        "delete",
        help="delete a token by name (it stops working; its name can be reused)",
        description="Delete a token altogether: every running server refuses it from "
        "its next request, and its name is free for `brain token create`.",
    )
    delete.add_argument("name")
    delete.set_defaults(handler=_delete)

    reopen = actions.add_parser(
        "reopen",
        help="let a loopback server with BRAIN_AUTH=auto answer without a token again",
        description="With BRAIN_AUTH=auto a server on loopback answers without a token "
        "only until the first token is created; revoking, deleting or outliving every "
        "token leaves it closed. This opens it again, as before the first token: every "
        "local caller may do everything. Refused while a usable token exists (revoke or "
        "delete them first). The next `brain token create` closes it again.",
    )
    reopen.set_defaults(handler=_reopen)


def _expiry(text: str) -> datetime:
    match = DURATION.match(text)
    if match:
        return utcnow() + timedelta(**{UNITS[match[2]]: int(match[1])})
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give 90d, 12h, 30m or a time") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r}: give the time with its offset, e.g. Z")
    return moment


def _in_session(work):
    engine = make_engine(Settings().database_url)
    try:
        with make_session_factory(engine)() as session:
            result = work(session)
            session.commit()
            return result
    finally:
        engine.dispose()


def _reporting(command: str):
    """A handler whose refusal (a BrainError: an unknown name, a name taken) is printed as
    ``brain token <command>: <message>`` with exit status 1."""

    def wrap(handler):
        def run(args) -> int:
            try:
                return handler(args)
            except BrainError as exc:
                print(f"brain token {command}: {exc.message}", file=sys.stderr)
                return 1

        return run

    return wrap


def _print_secret(secret: str, note: str) -> None:
    """The secret alone on stdout (for scripts to capture), what it is on stderr."""
    print(secret)
    print(note, file=sys.stderr)


@_reporting("create")
def _create(args) -> int:
    check_name(args.name, "--name")  # as POST /api/v1/tokens checks it (brain.names)
    for namespace in args.namespaces or ():
        check_name(namespace, "--namespace")
    new = _in_session(
        lambda s: create_token(s, args.name, args.scope, args.namespaces, args.expires)
    )
    _print_secret(
        new.secret,
        f"token {args.name!r} created ({_describe(new.token)}); the line above is its secret, "
        "shown this once: send it as `Authorization: Bearer <secret>`",
    )
    return 0


def _list(_args) -> int:
    tokens = _in_session(list_tokens)
    now = utcnow()
    print(f"{'name':24} {'prefix':14} {'state':8} {'scope':6} namespaces / created / expires")
    for token in tokens:
        if token.revoked_at is not None:
            state = "revoked"
        elif token.expires_at is not None and token.expires_at <= now:
            state = "expired"
        else:
            state = "active"
        print(f"{token.name:24} {token.prefix + '…':14} {state:8} {_describe(token)}")
    return 0


@_reporting("rotate")
def _rotate(args) -> int:
    new = _in_session(lambda s: rotate_token(s, args.name))
    _print_secret(
        new.secret,
        f"token {args.name!r} has a new secret ({_describe(new.token)}); the line above is "
        "the secret, shown this once; the old one no longer works",
    )
    return 0


@_reporting("delete")
def _delete(args) -> int:
    _in_session(lambda s: delete_token(s, args.name))
    print(f"token {args.name!r} deleted")
    return 0


@_reporting("reopen")
def _reopen(_args) -> int:
    _in_session(reopen_loopback)
    print(
        "reopened: a server on loopback with BRAIN_AUTH=auto now answers every local "
        "caller without a token, until the next `brain token create`"
    )
    return 0


@_reporting("revoke")
def _revoke(args) -> int:
    token = _in_session(lambda s: revoke_token(s, args.name))
    print(f"token {token.name!r} revoked at {token.revoked_at.isoformat()}")
    return 0


def _describe(token) -> str:
    namespaces = ",".join(token.namespaces) if token.namespaces else "every namespace"
    expires = token.expires_at.isoformat() if token.expires_at else "never"
    created = token.created_at.isoformat()
    return f"{token.scope:6} {namespaces}; created {created}; expires {expires}"
