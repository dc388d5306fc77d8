"""API tokens: create, list and revoke them, and check a presented secret.

Only the SHA-256 of a secret is stored. A secret is 32 random bytes, so there is nothing
to guess and a fast hash is the right one (password stretching protects guessable
secrets, at a cost per check that would put every request over a millisecond).

The database is the one source of truth for every server process: each change of a
token (create, rotate, revoke, delete, the bootstrap token's) raises the version in the
``token_state`` row in the same transaction. A check reads that version (one primary-key
read) and answers from ``TokenVerifier``'s cache only while it is unchanged, so a token
rotated, revoked or deleted anywhere is refused by every process at its next request.
The same row says since when tokens have existed: a loopback server with
``BRAIN_AUTH=auto`` answers without a token only before the first one, and after
``reopen_loopback``.

Transport-neutral on purpose: the REST API passes the ``Authorization: Bearer`` value,
a gRPC server passes the same token from its call metadata.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sqlalchemy import func, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from brain.config import AuthMode
from brain.db.engine import ReadSession
from brain.db.models import ApiToken, TokenStateRow
from brain.domain import utcnow
from brain.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthorized

SECRET_PREFIX = "brain_"
# The admin token BRAIN_BOOTSTRAP_TOKEN provides.
BOOTSTRAP_TOKEN_NAME = "bootstrap"


class TokenScope(StrEnum):
    """What a token may do; each scope includes the ones before it."""

    read = "read"  # GET: jobs, samples, plans, portraits, suggestions
    write = "write"  # also register and change jobs, push samples and events, optimize
    admin = "admin"  # everything, including what only an administrator may do

    def covers(self, needed: TokenScope) -> bool:
        order = list(TokenScope)
        return order.index(self) >= order.index(needed)


@dataclass(frozen=True)
class Principal:
    """Who is calling: a token's name, scope and namespaces (None: every namespace)."""

    name: str
    scope: TokenScope
    namespaces: frozenset[str] | None
    expires_at: datetime | None = None

    def allows(self, needed: TokenScope) -> bool:
        return self.scope.covers(needed)

    def require(self, needed: TokenScope, what: str) -> None:
        """Refuse (Forbidden) unless the token's scope covers ``needed``; ``what`` names
        the request in the message (an HTTP method, a gRPC call)."""
        if not self.allows(needed):
            raise Forbidden(f"token {self.name!r} has scope {self.scope}; {what} needs {needed}")

    def sees(self, namespace: str | None) -> bool:
        """Whether a job in ``namespace`` is visible (a job without one is not, to a
        namespace-restricted token)."""
        return self.namespaces is None or namespace in self.namespaces

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


def bearer_secret(authorization: str | None) -> str | None:
    """The secret of an ``Authorization: Bearer <secret>`` value, or None (absent, empty
    or another scheme); both transports send the token this way."""
    if authorization is None:
        return None
    kind, _, secret = authorization.partition(" ")
    return secret.strip() or None if kind.lower() == "bearer" else None


# Whoever calls while authentication is off.
OPEN_ACCESS = Principal(name="(authentication off)", scope=TokenScope.admin, namespaces=None)


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    secret: str  # shown once, never stored


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(
    session: Session,
    name: str,
    scope: TokenScope,
    namespaces: Iterable[str] | None = None,
    expires_at: datetime | None = None,
    now: datetime | None = None,
) -> NewToken:
    now = now or utcnow()
    if expires_at is not None and expires_at <= now:
        # It could never be used: refusing it says so instead of handing out a dead secret.
        raise InvalidInput(
            f"expires_at {expires_at.isoformat()} is not in the future", field="expires_at"
        )
    if session.scalar(select(ApiToken.id).where(ApiToken.name == name)) is not None:
        raise Conflict(f"a token named {name!r} exists; pick another name", field="name")
    secret = new_secret()
    token = ApiToken(
        name=name,
        secret_sha256=hash_secret(secret),
        prefix=shown_prefix(secret),
        scope=TokenScope(scope).value,
        namespaces=sorted(set(namespaces)) if namespaces else None,
        created_at=now,
        expires_at=expires_at,
    )
    session.add(token)
    session.flush()
    _tokens_changed(session, now)
    return NewToken(token=token, secret=secret)


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def shown_prefix(secret: str) -> str:
    """What `brain token list` shows of a secret: enough to tell tokens apart, and
    after our own prefix no more than 6 of its characters."""
    if secret.startswith(SECRET_PREFIX):
        return secret[: len(SECRET_PREFIX) + 6]
    return secret[:6]


def rotate_token(session: Session, name: str, now: datetime | None = None) -> NewToken:
    """A new secret for the token ``name``; the old one stops working, in every running
    server at its next request once this commits. Scope and namespaces stay; so does the lifetime,
    counted again from now (a 90-day token gets 90 days). A revoked token is not
    brought back: delete it and create a new one."""
    token = _named(session, name)
    if token.revoked_at is not None:
        raise Conflict(
            f"the token {name!r} is revoked; delete it and create a new one", field="name"
        )
    now = now or utcnow()
    if token.expires_at is not None:
        token.expires_at = now + (token.expires_at - token.created_at)
    secret = new_secret()
    token.secret_sha256 = hash_secret(secret)
    token.prefix = shown_prefix(secret)
    token.created_at = now
    session.flush()
    _tokens_changed(session, now)
    return NewToken(token=token, secret=secret)


def delete_token(session: Session, name: str) -> None:
    """Remove a token altogether (its name can then be given to a new one). Unlike a
    revocation, no record remains of who had access until when; a loopback server stays
    closed all the same."""
    session.delete(_named(session, name))
    session.flush()
    _tokens_changed(session, utcnow())


class BootstrapOutcome(StrEnum):
    created = "created"
    replaced = "replaced"  # the configured secret changed
    present = "present"
    revoked = "revoked"  # revoked by an administrator: stays so


def ensure_bootstrap_token(
    session: Session, secret: str, now: datetime | None = None
) -> BootstrapOutcome:
    """Make ``secret`` the admin token named ``bootstrap`` (BRAIN_BOOTSTRAP_TOKEN), so a
    server has a first token before anyone could create one. Idempotent: servers run
    this at every start."""
    digest = hash_secret(secret)
    same = session.scalar(select(ApiToken).where(ApiToken.secret_sha256 == digest))
    if same is not None:
        return BootstrapOutcome.revoked if same.revoked_at else BootstrapOutcome.present
    now = now or utcnow()
    token = session.scalar(select(ApiToken).where(ApiToken.name == BOOTSTRAP_TOKEN_NAME))
    outcome = BootstrapOutcome.replaced
    if token is None:
        token = ApiToken(name=BOOTSTRAP_TOKEN_NAME)
        session.add(token)
        outcome = BootstrapOutcome.created
    token.secret_sha256 = digest
    token.prefix = shown_prefix(secret)
    token.scope = TokenScope.admin.value
    token.namespaces = None
    token.created_at = now
    token.expires_at = None
    token.revoked_at = None
    session.flush()
    _tokens_changed(session, now)
    return outcome


def list_tokens(session: ReadSession) -> list[ApiToken]:
    return list(session.scalars(select(ApiToken).order_by(ApiToken.created_at, ApiToken.id)))


def revoke_token(session: Session, name: str, now: datetime | None = None) -> ApiToken:
    """Revoke by name; the row stays (who had access, until when). Revoking twice is fine."""
    token = _named(session, name)
    if token.revoked_at is None:
        token.revoked_at = now or utcnow()
        session.flush()
        _tokens_changed(session, token.revoked_at)
    return token


@dataclass(frozen=True)
class TokenState:
    """The ``token_state`` row: the version every change of a token raises, and since
    when tokens have existed (None: never, or reopened since)."""

    version: int
    closed_since: datetime | None


def read_token_state(session: ReadSession) -> TokenState:
    row = session.execute(
        select(TokenStateRow.version, TokenStateRow.closed_since).where(TokenStateRow.id == 1)
    ).one_or_none()
    return TokenState(0, None) if row is None else TokenState(*row)


def _tokens_changed(session: Session, now: datetime) -> None:
    """Raise the version (every process's cache of token checks is stale from the commit
    on) and mark tokens as having existed. One upsert: concurrent changes each add one."""
    insert = pg_insert if session.bind.dialect.name == "postgresql" else sqlite_insert
    row = TokenStateRow.__table__
    session.execute(
        insert(row)
        .values(id=1, version=1, closed_since=now)
        .on_conflict_do_update(
            index_elements=[row.c.id],
            set_={
                "version": row.c.version + 1,
                "closed_since": func.coalesce(row.c.closed_since, now),
            },
        )
    )


def reopen_loopback(session: Session) -> None:
    """Let a loopback server with ``BRAIN_AUTH=auto`` answer without a token again, as
    before the first token (``brain token reopen``). Refused while a usable token
    exists: revoke or delete them first, so reopening is a decision about a server
    nobody can sign in to, never a side effect of revoking the last token."""
    # The state row first: it stays locked until commit, so a token created meanwhile
    # either is counted below or raises the version after this, closing it again.
    _tokens_changed(session, utcnow())
    usable = count_usable_tokens(session)
    if usable:
        raise Conflict(
            f"{usable} usable token(s) exist; revoke or delete them before reopening",
            field="tokens",
        )
    session.execute(
        TokenStateRow.__table__.update().where(TokenStateRow.id == 1).values(closed_since=None)
    )


def _named(session: Session, name: str) -> ApiToken:
    token = session.scalar(select(ApiToken).where(ApiToken.name == name))
    if token is None:
        raise NotFound(f"no token named {name!r}", field="name")
    return token


def _usable(now: datetime):
    return (
        ApiToken.revoked_at.is_(None),
        or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > now),
    )


def count_usable_tokens(session: Session, now: datetime | None = None) -> int:
    return session.scalar(select(func.count()).where(*_usable(now or utcnow()))) or 0


def find_principal(session: Session, secret: str, now: datetime | None = None) -> Principal | None:
    """The principal of a usable token with this secret, or None."""
    token = session.scalar(
        select(ApiToken).where(
            ApiToken.secret_sha256 == hash_secret(secret), *_usable(now or utcnow())
        )
    )
    if token is None:
        return None
    return Principal(
        name=token.name,
        scope=TokenScope(token.scope),
        namespaces=None if token.namespaces is None else frozenset(token.namespaces),
        expires_at=token.expires_at,
    )


@dataclass
class _Entry:
    principal: Principal | None
    fetched_at: float


@dataclass(frozen=True)
class TokenReading:
    """Answers about tokens from one database session, after its version check."""

    state: TokenState
    principal: Callable[[str], Principal | None]  # of a usable token with this secret
    tokens_exist: Callable[[], bool]  # whether any usable token exists


class TokenVerifier:
    """Checks secrets against the database through a cache kept while the token version
    is unchanged.

    Each check reads the version first (``reading``); a changed one drops everything
    cached. Within one version an answer is reused for at most ``ttl_s`` seconds, which
    bounds how long a change made to ``api_tokens`` outside this module (by hand, in
    SQL) goes unseen. Unknown secrets are cached too, so a client trying random tokens
    costs the version read per request, not a search of the tokens.
    """

    MAX_ENTRIES = 10_000

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        ttl_s: float = 10.0,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._session_factory = session_factory
        self._ttl_s = ttl_s
        self._clock = clock
        self._version: int | None = None
        self._entries: dict[str, _Entry] = {}
        self._usable: tuple[bool, float] | None = None  # (answer, when fetched)
        self._lock = threading.Lock()

    @contextmanager
    def reading(self) -> Iterator[TokenReading]:
        with self._session_factory() as session:
            state = read_token_state(session)
            with self._lock:
                if state.version != self._version:
                    self._entries.clear()
                    self._usable = None
                    self._version = state.version
            yield TokenReading(
                state,
                functools.partial(self._principal, session),
                functools.partial(self._tokens_exist, session),
            )

    def verify(self, secret: str) -> Principal | None:
        with self.reading() as reading:
            return reading.principal(secret)

    def tokens_exist(self) -> bool:
        with self.reading() as reading:
            return reading.tokens_exist()

    def _principal(self, session: Session, secret: str) -> Principal | None:
        digest = hash_secret(secret)
        entry = self._entries.get(digest)
        if entry is None or self._stale(entry.fetched_at):
            entry = _Entry(find_principal(session, secret, self._clock()), time.monotonic())
            if len(self._entries) >= self.MAX_ENTRIES:
                self._entries.clear()
            self._entries[digest] = entry
        principal = entry.principal
        if principal is None or principal.expired(self._clock()):
            return None
        return principal

    def _tokens_exist(self, session: Session) -> bool:
        with self._lock:
            if self._usable is None or self._stale(self._usable[1]):
                count = count_usable_tokens(session, self._clock())
                self._usable = (count > 0, time.monotonic())
            return self._usable[0]

    def _stale(self, fetched_at: float) -> bool:
        return time.monotonic() - fetched_at > self._ttl_s


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class AuthPolicy:
    """Whether a caller needs a token, from ``BRAIN_AUTH``, the listen address and the
    tokens; the same rules for every transport."""

    def __init__(self, mode: AuthMode, host: str, verifier: TokenVerifier) -> None:
        self.mode = AuthMode(mode)
        self.host = host
        self.verifier = verifier

    def open_reason(self) -> str | None:
        """Why no token is needed right now, or None when one is."""
        if self.mode is AuthMode.disabled:
            return "BRAIN_AUTH=disabled: every caller may do everything"
        if not self._loopback_auto():
            return None
        with self.verifier.reading() as reading:
            return self._loopback_open(reading)

    def answers_from_memory(self, secret: str | None) -> bool:
        """Whether ``authenticate`` would answer without the database (for event loops):
        with authentication off, or for a caller without a token where one is always
        needed. Otherwise a check reads the token version."""
        return self.mode is AuthMode.disabled or (secret is None and not self._loopback_auto())

    def authenticate(self, secret: str | None) -> Principal:
        """The caller presenting ``secret`` (None: no token); raises Unauthorized."""
        if self.mode is AuthMode.disabled:
            return OPEN_ACCESS
        if secret is None and not self._loopback_auto():
            raise Unauthorized("send an API token: `Authorization: Bearer <token>`")
        with self.verifier.reading() as reading:
            if self._loopback_auto() and self._loopback_open(reading) is not None:
                return OPEN_ACCESS
            if secret is None:
                raise Unauthorized("send an API token: `Authorization: Bearer <token>`")
            principal = reading.principal(secret)
        if principal is None:
            raise Unauthorized("the token is unknown, expired or revoked")
        return principal

    def refuses_to_start(self) -> str | None:
        """Why a server must not start (listening beyond loopback with no token), or None."""
        if self.mode is AuthMode.disabled or is_loopback(self.host):
            return None
        if self.verifier.tokens_exist():
            return None
        return (
            f"Brain would listen on {self.host} and no API token exists, so anyone who can "
            "reach it could change anything. Create one with `brain token create --name NAME "
            "--scope admin`, or set BRAIN_AUTH=disabled to serve without authentication"
        )

    def report(self) -> dict[str, str]:
        """The /readyz entry."""
        try:
            reason = self.open_reason()
            closed = self._closed_without_tokens() if reason is None else None
        except SQLAlchemyError as exc:
            return {"status": "unknown", "detail": f"tokens unreadable: {type(exc).__name__}"}
        if reason is not None:
            return {"status": "open", "detail": reason}
        if closed is not None:
            return {"status": "enforced", "detail": f"bearer tokens required: {closed}"}
        return {"status": "enforced", "detail": "bearer tokens required"}

    def _loopback_auto(self) -> bool:
        return self.mode is AuthMode.auto and is_loopback(self.host)

    def _loopback_open(self, reading: TokenReading) -> str | None:
        # Open only before the first token (or after `brain token reopen`): revoking,
        # expiring or deleting every token leaves the server closed.
        if reading.state.closed_since is not None or reading.tokens_exist():
            return None
        return (
            f"no API token has been created and Brain listens on loopback ({self.host}): "
            "every local caller may do everything; `brain token create` turns tokens on"
        )

    def _closed_without_tokens(self) -> str | None:
        """On loopback with BRAIN_AUTH=auto, when no token is usable although tokens have
        existed: what the operator can do."""
        if not self._loopback_auto():
            return None
        with self.verifier.reading() as reading:
            since = reading.state.closed_since
            if since is None or reading.tokens_exist():
                return None
        return (
            f"API tokens have existed since {since.isoformat()} and none is usable now; "
            "`brain token create` makes one, `brain token reopen` opens this loopback "
            "server again"
        )
