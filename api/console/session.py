"""Who is looking at the console: the API token given at sign-in, kept in a cookie.

The cookie holds the token itself, HttpOnly (page scripts cannot read it) and
SameSite=Strict (no other site's page can make the browser send it), Secure when the
console is reached over HTTPS; each page checks it exactly as the API checks a bearer
token (same checks, same revocation at once, same namespaces). A server the API answers
without a token (loopback before the first token, or BRAIN_AUTH=disabled) shows the console
without signing in.

Signing in and out are the console's only form posts, and each must come from one of
its own pages (``cross_site_reason``): otherwise another site could sign a visitor in
with the attacker's token (login CSRF) or out.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from api.state import server_state
from brain.errors import Unauthorized
from brain.services.tokens import AuthPolicy, Principal

COOKIE = "brain_console"
# Where signing in may send the browser back to: console pages only (no open redirect).
CONSOLE_PREFIX = "/ui/"


class SignInRequired(Exception):
    """No usable token in the cookie: the page answers with the sign-in form."""

    def __init__(self, back_to: str, message: str) -> None:
        super().__init__(message)
        self.back_to = back_to
        self.message = message


async def console_principal(request: Request) -> Principal:
    """The signed-in caller; raises SignInRequired when there is none."""
    policy: AuthPolicy = server_state(request.app).auth_policy
    secret = request.cookies.get(COOKIE) or None
    try:
        if policy.answers_from_memory(secret):
            return policy.authenticate(secret)
        return await run_in_threadpool(policy.authenticate, secret)
    except Unauthorized as exc:
        back_to = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        message = "" if secret is None else "your session's token is no longer valid: " + str(exc)
        raise SignInRequired(back_to, message) from exc


async def principal_for(policy: AuthPolicy, secret: str) -> Principal:
    """Check a token typed at sign-in; raises Unauthorized."""
    if policy.answers_from_memory(secret):
        return policy.authenticate(secret)
    return await run_in_threadpool(policy.authenticate, secret)


def safe_back_to(value: str | None) -> str:
    """A console path to return to after signing in; anything else goes to the overview."""
    if value and value.startswith(CONSOLE_PREFIX) and "//" not in value and "\\" not in value:
        return value
    return CONSOLE_PREFIX


def cross_site_reason(request: Request) -> str | None:
    """Why a form post is refused as not coming from this server's own pages, or None.

    The browser says where a post comes from: ``Origin`` (every current browser sends it
    with a form post), else ``Referer``; one of them must name this server, as the
    ``Host`` header does. A post naming neither is refused too: a browser always names
    one, and no other client needs the console's cookie. An HTTPS page may post to a
    server that sees plain HTTP (TLS ended by a proxy in front), not the reverse."""
    origin = request.headers.get("origin")
    header = "Origin"
    if origin is None:
        origin = request.headers.get("referer")
        header = "Referer"
    if origin is None:
        return "the request names no Origin or Referer; sign in from the console's own page"
    sent = urlsplit(origin)
    host = request.headers.get("host", "").lower()
    schemes = {"http", "https"} if request.url.scheme == "http" else {"https"}
    if sent.scheme in schemes and sent.netloc.lower() == host and host:
        return None
    return f"cross-site request refused: {header} {origin[:200]!r} is not this console"


def sign_in_location(back_to: str) -> str:
    return f"{CONSOLE_PREFIX}sign-in?next={quote(back_to, safe='/')}"
