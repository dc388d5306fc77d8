"""The console's pages: server-rendered HTML over the same services and answer models as
the JSON API. Read-only: the only forms sign in, sign out and ask for a suggestion."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from api.console import tables
from api.console.advice import advise, owner_advice
from api.console.charts import trend_charts
from api.console.embedding import script_json
from api.console.owners import owner_window
from api.console.prose import first_paragraph, format_prose, rest_paragraphs
from api.console.session import (
    COOKIE,
    console_principal,
    cross_site_reason,
    principal_for,
    safe_back_to,
)
from api.console.views import chart_data, plan_timeline, resources_blocks
from api.console.window import WINDOW_DAYS, window_of
from api.deps import (
    ReadSessionDep,
    RegistryDep,
    SettingsDep,
    SizingModelDep,
    UpgradableReadSessionDep,
)
from api.dlrover.scaleplan import scaleplans
from api.job_ref import JobNamespace
from api.routing import OffloadedRoute
from api.schemas.plans import PlanOut
from api.schemas.portraits import JobPortraitOut, RankingRow, TotalsOut
from api.schemas.suggestions import SuggestionCostOut, SuggestionOut
from api.state import server_state
from brain.domain import K8S_LABEL, NAMESPACE_MAX, JobStatus, utcnow
from brain.errors import Conflict, NotFound, Unauthorized
from brain.history.plausible import SECONDS_PER_DAY
from brain.job_ref import JobRef
from brain.portraits import jobs as portraits
from brain.portraits.job_table import SORTS, JobTableFilters, job_table
from brain.portraits.overview import job_counts
from brain.portraits.spend import run_spend, spend_by
from brain.portraits.suggestions import SuggestionQuery, suggest
from brain.portraits.trend import TrendScope, Week, weekly_trend, window_sum
from brain.services import events, plans, pods
from brain.services.cluster import latest_cluster_state
from brain.services.tokens import OPEN_ACCESS, Principal
from brain.summaries.hours import RESOURCES

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")
PAGE_SIZE = 50
# Jobs in the jobs list's CSV: every matching job up to this bound.
CSV_ROWS = 10_000
# Plans on a job page (newest first from the store, shown oldest first).
TIMELINE_PLANS = 50
OVERVIEW_DAYS = 7
OWNER_DAYS = 30
# A custom window's longest span: two years, 105 weekly bars at most.
MAX_WINDOW_DAYS = 731
# Long enough for a working day; the token's own expiry and revocation still apply.
COOKIE_MAX_AGE_S = 12 * 3600

router = APIRouter(prefix="/ui", include_in_schema=False, route_class=OffloadedRoute)
Signed = Annotated[Principal, Depends(console_principal)]
Filter = Annotated[str | None, Query(max_length=400)]
NamespaceFilter = Annotated[str | None, Query(max_length=NAMESPACE_MAX, pattern=K8S_LABEL)]
# ?format=csv: a table of the page as CSV (?table= names which; default the first).
Format = Annotated[str | None, Query(max_length=8)]
TableName = Annotated[str | None, Query(max_length=32)]
# The window of a page: one of WINDOW_DAYS, or from/to (dates or RFC 3339 times).
Days = Annotated[str | None, Query(max_length=8)]
WindowFrom = Annotated[str | None, Query(alias="from", max_length=40)]
WindowTo = Annotated[str | None, Query(alias="to", max_length=40)]
NamespacePath = Annotated[str, PathParam(max_length=NAMESPACE_MAX, pattern=K8S_LABEL)]


# The browser itself refuses anything from another origin, inline scripts and framing by
# other sites (the charts' data rides in a JSON block, which is not executed).
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'; "
    "form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def page(request: Request, template: str, principal: Principal | None, status: int = 200, **ctx):
    return templates.TemplateResponse(
        request,
        template,
        {
            "principal": principal,
            "open_access": _open(request) if principal is None else principal is OPEN_ACCESS,
            # What dollars are computed at: the banner and each page's money name them.
            "money": server_state(request.app).settings.prices,
            **ctx,
        },
        status_code=status,
        headers=SECURITY_HEADERS,
    )


def _open(request: Request) -> bool:
    """Whether the server answers without a token, for a page shown to nobody signed in
    (a signed-in page knows from its principal: open access is the one it was given,
    without reading the token state again)."""
    return server_state(request.app).auth_policy.open_reason() is not None


def _spans_every_namespace(
    request: Request, principal: Principal, what: str, namespace: str | None = None
):
    """Aggregates over every namespace are not for namespace-limited tokens (as in the API);
    narrowed to one of their namespaces (``?namespace=``) they are."""
    if principal.namespaces is None or namespace in principal.namespaces:
        return None
    why = f"{what} spans every namespace unless ?namespace= names one of them."
    return _not_for_token(request, principal, why)


def _not_for_token(request: Request, principal: Principal, why: str) -> Response:
    """The 403 page for a namespace-limited token: the namespaces it reads, and ``why``
    this page is not among them."""
    message = (
        f"Your token is limited to namespaces {', '.join(sorted(principal.namespaces))}; {why}"
    )
    return page(request, "error.html", principal, 403, title="Not for this token", message=message)


def _filled(**fields: str | None) -> dict[str, str]:
    """The form's fields that were filled in, trimmed (blank ones are no filter)."""
    return {key: value.strip() for key, value in fields.items() if value and value.strip()}


@dataclass(frozen=True)
class PageWindow:
    """The window of the overview, namespace, user and group pages: the last ``days`` (to
    now), or a custom ``since``–``end``."""

    since: datetime
    end: datetime
    days: int | None  # None: a custom window
    start_text: str = ""  # the form's from and to, as given
    end_text: str = ""


def _page_window(
    days: str | None,
    start: str | None,
    end: str | None,
    now: datetime,
    default_days: int = OVERVIEW_DAYS,
) -> PageWindow | str:
    """The window asked for (default the last ``default_days``), or the problem with it."""
    fields = _filled(days=days, start=start, end=end)
    if not fields:
        fields["days"] = str(default_days)
    window = window_of(fields.get("days"), fields.get("start"), fields.get("end"), now)
    if window.problems:
        return window.problems[0]
    if window.since is None:
        return "from is needed with to: give the window's first day"
    until = window.before or now
    if window.since >= until:
        return "from must be before now"
    if until - window.since > timedelta(days=MAX_WINDOW_DAYS):
        return f"from–to spans more than {MAX_WINDOW_DAYS} days"
    days_given = fields.get("days")
    return PageWindow(
        window.since,
        until,
        int(days_given) if days_given else None,
        fields.get("start", ""),
        fields.get("end", ""),
    )


def _window_or_refusal(
    request: Request,
    principal: Principal,
    fields: tuple[str | None, str | None, str | None],
    format: str | None,
    now: datetime,
    default_days: int = OVERVIEW_DAYS,
) -> PageWindow | Response:
    """The window the page's ``fields`` (days, from, to) ask for, or the 400 naming its
    problem: a page, or plain text for a CSV."""
    window = _page_window(*fields, now, default_days)
    if isinstance(window, PageWindow):
        return window
    if format == tables.CSV:
        return PlainTextResponse(f"{window}\n", 400)
    return page(request, "error.html", principal, 400, title="No such window", message=window)


@dataclass(frozen=True)
class WindowView:
    """The window's totals and cost, its five users wasting most, and its weeks."""

    week: TotalsOut
    top: list[RankingRow]
    trend: list[Week]

    def csv_tables(self, *names: str) -> dict[str, tables.Table]:
        """The window's tables for CSV, in the page's order of ``names``."""
        every = {
            "week": tables.hours_table(self.week.hours, self.week.cost),
            "wasters": tables.wasters_table(self.top),
            "trend": tables.trend_table(self.trend),
        }
        return {name: every[name] for name in names}

    def context(self, settings, window: PageWindow) -> dict:
        """What the overview and namespace templates show of the window."""
        return {
            "week": self.week,
            "top": self.top,
            "trend": self.trend,
            "charts": trend_charts(self.trend, settings.prices.label),
            "window": window,
            "window_days": WINDOW_DAYS,
        }


def _window_view(session, settings, window: PageWindow, namespace: str | None) -> WindowView:
    """Of every namespace, or of ``namespace``. The totals and cost are the weeks' added
    up: one read of the window's jobs for both."""
    since, end = window.since, window.end
    prices = settings.prices if settings.prices.configured else None
    # Runs are believed as long as the setting allows, as on the owner pages.
    max_run_s = settings.history_max_run_days * SECONDS_PER_DAY
    trend = weekly_trend(session, since, end, TrendScope(namespace), prices, max_run_s)
    totals, cost = window_sum(trend)
    rows, _ = portraits.ranking(
        session, "user", since, "gpu", 5, 0, max_run_s, namespace=namespace, end=end
    )
    keys = [k for k, _ in rows]
    spent = {}
    if prices is not None:
        spent = spend_by(session, "user", keys, since, prices, namespace, end, max_run_s)
    # Ranked by waste, most first: a key that wasted nothing (a user whose jobs have
    # only just started) is no waster, and can only trail the list.
    top = [
        RankingRow(key=k, totals=TotalsOut.of(t, spent.get(k)))
        for k, t in rows
        if any(t.hours.waste(resource) > 0 for resource, *_ in RESOURCES)
    ]
    return WindowView(TotalsOut.of(totals, cost), top, trend)


@dataclass(frozen=True)
class WindowQuery:
    """What a windowed page (the overview, a user's, a group's) was asked for besides
    whose it is: a namespace, the window, and CSV."""

    namespace: str | None
    days: str | None
    start: str | None
    end: str | None
    format: str | None
    table: str | None


def _window_query(
    namespace: NamespaceFilter = None,
    days: Days = None,
    start: WindowFrom = None,
    end: WindowTo = None,
    format: Format = None,
    table: TableName = None,
) -> WindowQuery:
    return WindowQuery(namespace, days, start, end, format, table)


WindowQueryDep = Annotated[WindowQuery, Depends(_window_query)]


@router.get("/", response_class=HTMLResponse)
def overview(
    request: Request,
    session: ReadSessionDep,
    settings: SettingsDep,
    principal: Signed,
    query: WindowQueryDep,
) -> Response:
    """Jobs now, the cluster, and the window's totals, cost, top wasters and weekly
    trends: of every namespace, or of ``namespace`` (a namespace-limited token sees
    totals only so). The window: the last ``days`` (7 by default), or ``from``–``to``."""
    namespace, format, table = query.namespace, query.format, query.table
    if (wrong := tables.wrong_format(format)) is not None:
        return wrong
    refused = _spans_every_namespace(request, principal, "the overview's totals", namespace)
    if namespace is not None and refused is not None:
        return refused
    now = utcnow()
    window = _window_or_refusal(
        request, principal, (query.days, query.start, query.end), format, now
    )
    if not isinstance(window, PageWindow):
        return window
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    scope = principal.namespaces if namespace is None else frozenset({namespace})
    counts = job_counts(session, today, scope)
    view = None if refused is not None else _window_view(session, settings, window, namespace)
    if format == tables.CSV:
        if view is None:
            return refused
        found = view.csv_tables("week", "wasters", "trend")
        return tables.csv_response(found, table, f"overview-{namespace or 'all'}")
    shown = view.context(settings, window) if view else {"window": window}
    return page(
        request,
        "overview.html",
        principal,
        counts=counts,
        cluster=latest_cluster_state(session) if principal.namespaces is None else None,
        namespace=namespace,
        own_namespaces=sorted(principal.namespaces or ()),
        **shown,
    )


@router.get("/namespaces/{namespace}", response_class=HTMLResponse)
def namespace_page(
    namespace: NamespacePath,
    request: Request,
    session: ReadSessionDep,
    settings: SettingsDep,
    principal: Signed,
    days: Days = None,
    start: WindowFrom = None,
    end: WindowTo = None,
    format: Format = None,
    table: TableName = None,
) -> Response:
    """A namespace's totals, cost, weekly trends and users wasting most in the window
    (as the overview's), for a token that may read it."""
    if (wrong := tables.wrong_format(format)) is not None:
        return wrong
    if not principal.sees(namespace):
        return _not_for_token(request, principal, f"namespace {namespace!r} is not one of them.")
    window = _window_or_refusal(request, principal, (days, start, end), format, utcnow())
    if not isinstance(window, PageWindow):
        return window
    view = _window_view(session, settings, window, namespace)
    if format == tables.CSV:
        found = view.csv_tables("trend", "week", "wasters")
        return tables.csv_response(found, table, f"namespace-{namespace}")
    return page(
        request, "namespace.html", principal, namespace=namespace, **view.context(settings, window)
    )


@router.get("/jobs", response_class=HTMLResponse)
def job_list(
    request: Request,
    session: ReadSessionDep,
    settings: SettingsDep,
    principal: Signed,
    user: Filter = None,
    group: Filter = None,
    namespace: Filter = None,
    status: Filter = None,
    name: Filter = None,
    dataset: Filter = None,
    gpu_type: Filter = None,
    sort: Filter = "newest",
    days: Annotated[str | None, Query(max_length=8)] = None,
    started_from: Annotated[str | None, Query(alias="from", max_length=40)] = None,
    started_to: Annotated[str | None, Query(alias="to", max_length=40)] = None,
    page_number: Annotated[int, Query(alias="page", ge=1, le=100_000)] = 1,
    format: Format = None,
    table: TableName = None,
) -> Response:
    """Jobs, filtered, started in a window (the last ``days``, or ``from``–``to``) and
    sorted, 50 a page; as CSV every matching job (up to CSV_ROWS, the page ignored)."""
    if (wrong := tables.wrong_format(format)) is not None:
        return wrong
    given = _filled(
        user=user,
        group=group,
        namespace=namespace,
        status=status,
        name=name,
        dataset=dataset,
        gpu_type=gpu_type,
    )
    problems = []
    if "status" in given and given["status"] not in {s.value for s in JobStatus}:
        problems.append(f"status {given['status']!r} is not one of the job statuses")
        given.pop("status")
    if sort not in SORTS:
        problems.append(f"sort {sort!r} is not one of {', '.join(SORTS)}")
        sort = "newest"
    window_fields = _filled(days=days, **{"from": started_from, "to": started_to})
    window = window_of(
        window_fields.get("days"), window_fields.get("from"), window_fields.get("to"), utcnow()
    )
    problems.extend(window.problems)
    if not window.problems:
        given.update(window_fields)
    # The form says "group" where the table says group_key.
    columns = {
        ("group_key" if key == "group" else key): value
        for key, value in given.items()
        if key not in window_fields
    }
    filters = JobTableFilters(
        **columns,
        namespaces=principal.namespaces,
        started_since=window.since,
        started_before=window.before,
    )
    prices = settings.prices if settings.prices.configured else None
    if format == tables.CSV:
        if problems:
            return PlainTextResponse("\n".join(problems) + "\n", 400)
        rows, _ = job_table(session, filters, sort, CSV_ROWS, 0)
        return tables.csv_response({"jobs": tables.jobs_table(rows, prices)}, table, "jobs")
    offset = (page_number - 1) * PAGE_SIZE
    rows, total = job_table(session, filters, sort, PAGE_SIZE, offset)
    pages = max(1, -(-total // PAGE_SIZE))
    return page(
        request,
        "jobs.html",
        principal,
        rows=rows,
        total=total,
        given=given,
        sort=sort,
        sorts=SORTS,
        statuses=[s.value for s in JobStatus],
        page_number=page_number,
        pages=pages,
        problems=problems,
        prices=prices,
        window_days=WINDOW_DAYS,
        namespace_page=_readable_namespace(principal, given.get("namespace")),
    )


def _readable_namespace(principal: Principal, namespace: str | None) -> str | None:
    """``namespace`` when it has a page this token may open (a valid name it reads),
    else None: a filter naming another namespace links to nothing."""
    if namespace is None or not principal.sees(namespace):
        return None
    valid = len(namespace) <= NAMESPACE_MAX and re.fullmatch(K8S_LABEL, namespace)
    return namespace if valid else None


@router.get("/jobs/{uid}", response_class=HTMLResponse)
def job_page(
    uid: str,
    request: Request,
    # The advice's suggestion may summarize a related run that just finished: a write.
    session: UpgradableReadSessionDep,
    settings: SettingsDep,
    registry: RegistryDep,
    sizing_model: SizingModelDep,
    principal: Signed,
    namespace: JobNamespace = None,
    format: Format = None,
    table: TableName = None,
) -> Response:
    """The job the uid names among the namespaces the token may read; ``namespace``
    (empty: the job without one) when several of them hold the uid."""
    if (wrong := tables.wrong_format(format)) is not None:
        return wrong
    named = namespace is not None
    ref = JobRef(uid, namespace or None, named=named, readable=principal.namespaces)
    # Exactly as for a job that does not exist: a limited token cannot probe.
    missing = f"No job with uid {uid!r}."
    if named and not principal.sees(ref.namespace):
        return page(request, "error.html", principal, 404, title="No such job", message=missing)
    try:
        # The job row comes with its portrait: one read of it.
        job, found = portraits.job_and_portrait(session, ref, 200)
    except NotFound:
        return page(request, "error.html", principal, 404, title="No such job", message=missing)
    except Conflict as exc:
        return page(request, "error.html", principal, 409, title="Which job?", message=exc.message)
    portrait = JobPortraitOut.of(found, settings.prices)
    node_roles = pods.roles_by_name(session, job)
    stored = plans.list_plans(session, job, TIMELINE_PLANS, None)
    manifests = scaleplans(session, job, stored)
    timeline = plan_timeline(
        [PlanOut.of(p, uid) for p in stored], portrait.summary.plans, manifests
    )
    job_events = events.list_events(session, job, limit=1000)
    charts = chart_data(portrait, job_events, node_roles)
    advice = None
    if _may_suggest(principal):
        advice = advise(session, registry, settings, sizing_model, job, portrait.roles)
    if format == tables.CSV:
        found = {
            "roles": tables.roles_table(portrait.roles),
            "job-hours": tables.hours_table(portrait.summary.hours, portrait.summary.cost),
            "advice": tables.advice_table([advice] if advice else []),
            "events": tables.events_table(job_events),
        }
        return tables.csv_response(found, table, f"job-{uid}")
    return page(
        request,
        "job.html",
        principal,
        job=job,
        portrait=portrait,
        timeline=timeline,
        events=job_events,
        charts=charts,
        advice=[advice] if advice else [],
        advice_withheld=not _may_suggest(principal),
    )


def _may_suggest(principal: Principal) -> bool:
    """A suggestion learns from every namespace's runs: not for a namespace-limited token
    (as on the suggestion page and in the API)."""
    return principal.namespaces is None


@router.get("/pods/{namespace}/{pod}", response_class=HTMLResponse)
def pod_page(
    namespace: str, pod: str, request: Request, session: ReadSessionDep, principal: Signed
) -> Response:
    """The job page of the job a pod belongs to (a node is named as its pod): where
    Grafana's per-pod panels (DCGM, cAdvisor) link to."""
    uid = pods.job_uid_of_pod(session, namespace, pod)
    if uid is None or not principal.sees(namespace):
        message = f"No job has a node {pod!r} in namespace {namespace!r}."
        return page(request, "error.html", principal, 404, title="No such pod", message=message)
    target = f"/ui/jobs/{quote(uid, safe='')}?namespace={quote(namespace, safe='')}"
    return RedirectResponse(target, status_code=303)


@router.get("/users/{user}", response_class=HTMLResponse)
def user_page(
    user: str,
    request: Request,
    session: UpgradableReadSessionDep,
    settings: SettingsDep,
    registry: RegistryDep,
    sizing_model: SizingModelDep,
    principal: Signed,
    view: WindowQueryDep,
) -> Response:
    advisers = (registry, sizing_model)
    return _owner_page(request, session, settings, advisers, principal, "user", user, view)


@router.get("/groups/{group:path}", response_class=HTMLResponse)
def group_page(
    group: str,
    request: Request,
    session: UpgradableReadSessionDep,
    settings: SettingsDep,
    registry: RegistryDep,
    sizing_model: SizingModelDep,
    principal: Signed,
    view: WindowQueryDep,
) -> Response:
    advisers = (registry, sizing_model)
    return _owner_page(request, session, settings, advisers, principal, "group", group, view)


def _owner_page(
    request, session, settings, advisers, principal: Principal, owner: str, key: str, view
):
    """A user's or group's totals, priority, most wasteful jobs, advice and weeks in the
    window: the last ``days`` (OWNER_DAYS by default), or ``from``–``to``."""
    if (wrong := tables.wrong_format(view.format)) is not None:
        return wrong
    namespace = view.namespace
    refused = _spans_every_namespace(request, principal, f"a {owner}'s portrait", namespace)
    if refused is not None:
        return refused
    fields = (view.days, view.start, view.end)
    window = _window_or_refusal(request, principal, fields, view.format, utcnow(), OWNER_DAYS)
    if not isinstance(window, PageWindow):
        return window
    found = owner_window(session, settings, owner, key, window.since, window.end, namespace)
    advice = []
    if _may_suggest(principal):
        registry, sizing_model = advisers
        uids = [j.uid for j in found.wasteful]
        user, group = (key, None) if owner == "user" else (None, key)
        advice = owner_advice(
            session, registry, settings, sizing_model, uids, user, group, namespace
        )
    if view.format == tables.CSV:
        csv_tables = {
            "wasteful": tables.wasteful_table(found.wasteful),
            "trend": tables.trend_table(found.trend),
            "advice": tables.advice_table(advice),
        }
        return tables.csv_response(csv_tables, view.table, f"{owner}-{key}")
    return page(
        request,
        "owner.html",
        principal,
        portrait=found,
        trend=found.trend,
        charts=trend_charts(found.trend, settings.prices.label),
        namespace=namespace,
        advice=advice,
        advice_withheld=not _may_suggest(principal),
        window=window,
        window_days=WINDOW_DAYS,
    )


@router.get("/suggest", response_class=HTMLResponse)
def suggestion_page(
    request: Request,
    session: UpgradableReadSessionDep,
    settings: SettingsDep,
    registry: RegistryDep,
    sizing_model: SizingModelDep,
    principal: Signed,
    user: Filter = None,
    name: Filter = None,
    dataset: Filter = None,
    gpu_type: Filter = None,
    format: Format = None,
    table: TableName = None,
) -> Response:
    if (wrong := tables.wrong_format(format)) is not None:
        return wrong
    refused = _spans_every_namespace(request, principal, "a suggestion (it learns from every run)")
    if refused is not None:
        return refused
    asked = _filled(user=user, name=name, dataset=dataset, gpu_type=gpu_type)
    suggestion = blocks = None
    problem = None
    if asked:
        if not set(asked) - {"gpu_type"}:
            problem = "Give at least one of user, name or dataset."
        else:
            query = SuggestionQuery(**asked)
            found = suggest(session, registry, settings, query, sizing_model=sizing_model)
            spend = run_spend(session, found, settings.prices, query.gpu_type)
            suggestion = SuggestionOut.model_validate(found)
            suggestion.cost = None if spend is None else SuggestionCostOut.model_validate(spend)
            blocks = resources_blocks(suggestion)
    if format == tables.CSV:
        if problem is not None or suggestion is None:
            return PlainTextResponse(
                (problem or "Give at least one of user, name or dataset.") + "\n", 400
            )
        found = {"suggestion": tables.suggestion_table(suggestion)}
        return tables.csv_response(found, table, "suggestion")
    return page(
        request,
        "suggest.html",
        principal,
        asked=asked,
        suggestion=suggestion,
        blocks=blocks,
        problem=problem,
    )


@router.get("/optimizers", response_class=HTMLResponse)
def optimizers_page(request: Request, registry: RegistryDep, principal: Signed) -> Response:
    return page(request, "optimizers.html", principal, optimizers=registry.info())


@router.get("/sign-in", response_class=HTMLResponse)
def sign_in_form(request: Request, next: Filter = None) -> Response:
    return page(request, "sign_in.html", None, back_to=safe_back_to(next), message=None)


@router.post("/sign-in", response_class=HTMLResponse)
async def sign_in(request: Request) -> Response:
    """Check the token; on success keep it in the session cookie and go back. Only
    from the console's own sign-in page (no login CSRF)."""
    refused = await _cross_site(request)
    if refused is not None:
        return refused
    form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=10)
    token = (form.get("token") or [""])[0].strip()
    back_to = safe_back_to((form.get("next") or [None])[0])
    try:
        if not token:
            raise Unauthorized("paste an API token (`brain token create`)")
        await principal_for(server_state(request.app).auth_policy, token)
    except Unauthorized as exc:
        # A page reads whether the server is open: off the event loop.
        return await run_in_threadpool(
            page, request, "sign_in.html", None, 401, back_to=back_to, message=exc.message
        )
    response = RedirectResponse(back_to, status_code=303)
    response.set_cookie(
        COOKIE,
        token,
        max_age=COOKIE_MAX_AGE_S,
        path="/ui/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    refused = await _cross_site(request)
    if refused is not None:
        return refused
    response = RedirectResponse("/ui/sign-in", status_code=303)
    response.delete_cookie(COOKIE, path="/ui/", httponly=True, samesite="strict")
    return response


async def _cross_site(request: Request) -> Response | None:
    """The 403 page for a form post from another site, or None (api.console.session)."""
    reason = cross_site_reason(request)
    if reason is None:
        return None
    return await run_in_threadpool(
        page, request, "error.html", None, 403, title="Refused", message=reason
    )


def format_time(value: datetime | None) -> str:
    if value is None:
        return "—"
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def format_number(value: float | int | None, digits: int = 1) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def format_usd(value: float | None) -> str:
    if value is None:
        return "—"
    return f"−${-value:,.2f}" if value < 0 else f"${value:,.2f}"


def format_percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def format_gib(mib: float | None) -> str:
    return "—" if mib is None else f"{mib / 1024:,.1f}"


def format_spec(spec) -> str:
    """A role size in one line: count × cpu cores, memory GiB, GPUs."""
    if spec is None:
        return "—"
    parts = []
    if spec.count is not None:
        parts.append(f"{spec.count} ×")
    if spec.cpu is not None:
        limit = f" (limit {spec.cpu_limit:g})" if spec.cpu_limit is not None else ""
        parts.append(f"{spec.cpu:g} cores{limit}")
    if spec.memory_mib is not None:
        parts.append(f"{spec.memory_mib / 1024:g} GiB")
    if spec.gpu:
        parts.append(f"{spec.gpu:g} GPU")
    return " ".join(parts) or "unchanged"


templates.env.globals["csv_link"] = tables.csv_link
templates.env.filters["time"] = format_time
templates.env.filters["gib"] = format_gib
templates.env.filters["spec"] = format_spec
templates.env.filters["num"] = format_number
templates.env.filters["pct"] = format_percent
templates.env.filters["usd"] = format_usd
# JSON in pages goes through one escaping (api.console.embedding), Jinja's own filter too.
templates.env.filters["tojson"] = script_json
templates.env.filters["prose"] = format_prose
templates.env.filters["first_paragraph"] = first_paragraph
templates.env.filters["rest_paragraphs"] = rest_paragraphs
