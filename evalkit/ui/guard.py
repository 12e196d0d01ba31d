"""What the app's HTTP server refuses before any handler runs: an ASGI middleware on the FastAPI app that
`gr.Blocks.launch` makes (passed in through `app_kwargs`, so it sits inside Gradio's own middleware).

- **Request bodies are capped** (MAX_BODY): a declared Content-Length over the cap is answered 413 at once; a body
  without one (chunked) is counted as it arrives and refused the moment it passes the cap. A body under the cap is
  read here and handed on whole, so no handler ever holds more than MAX_BODY of one request.
- **Deep links are off.** Gradio's deep-link route (`/gradio_api/deep_link?session_hash=…`) copies a session's
  component values (a rater's sealed code among them) into a file in its upload folder and makes a link that loads
  them into whoever opens it; this app has no use for one. The route answers 404, a page's `deep_link` parameter is
  dropped (every key that decodes to it, percent-encoded ones included), and nothing under a `deep_links` folder is
  served.
- **Every request is stamped with when it arrived** (ARRIVED, read by `arrived_at`): an event's handler learns when its
  queue join reached the server, not only when the busy queue let it run. Sign out is final for the sign-ins that
  arrived before it (evalkit.ui.session._Ended).
- **New pages are limited per client** (PAGES_PER_CLIENT an hour, _Pages): an event's request names its page (Gradio's
  session id, which a raw request picks freely), and Gradio keeps the state of its newest 10,000 pages only, as this
  app keeps its records by page (evalkit.ui.session.PAGES_KEPT): a flood of forged pages from one address pushed a
  real rater's page out, signing her out (attacker audit, round 8). A page the client already used is never refused."""

from __future__ import annotations

import json
import math
import re
import secrets
import threading
import time
from collections import OrderedDict, deque
from urllib.parse import parse_qsl, urlencode

# The largest request body the app takes. A rating (every answer and a 2,000-character comment) is about 10 KB.
MAX_BODY = 64 * 1024
_BODY_METHODS = {"POST", "PUT", "PATCH"}
DEEP_LINK = "deep_link"  # the query parameter Gradio's page route reads a deep link from
ARRIVED = "evalkit_arrived"  # the request's state key: time.monotonic() when it reached this middleware
# New pages (Gradio sessions) one client may open in an hour: a rater reloads a few times an hour, so this leaves room
# for a campus behind one address, while a flood from one address fills at most a tenth of Gradio's 10,000 sessions
PAGES_PER_CLIENT, PAGES_WINDOW = 1000, 3600.0
# the routes whose request names a page whose state Gradio keeps (a body without its session id is a new one each)
_EVENT_ROUTE = re.compile(r"/(queue/join|call/[^/]+|run/[^/]+|api/[^/]+|component_server)/?$")


def arrived_at(request) -> float:
    """When the request behind a handler's gr.Request (for a queued event: its queue join) reached the server;
    now, where it was not stamped (a handler called without the middleware)."""
    scope = getattr(getattr(request, "request", None), "scope", None)
    at = (scope.get("state") or {}).get(ARRIVED) if isinstance(scope, dict) else None
    return at if isinstance(at, float) else time.monotonic()


def pages_full(wait: float) -> str:
    """The refusal of a new page past PAGES_PER_CLIENT, in both languages (no page has said its own yet): the browser's
    page shows it as it is (Gradio's toast shows a refused queue join's `detail`). A rater meets it on a reload, so it
    says her open pages keep working and when reloading works again."""
    from .words import word

    fill = {"limit": PAGES_PER_CLIENT, "minutes": max(1, math.ceil(wait / 60))}
    return f"{word('pages_full', 'zh', **fill)}。（{word('pages_full', 'en', **fill)}）"


async def _answer(send, status: int, text: str) -> None:
    body = json.dumps({"detail": text}, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class _Pages:
    """The pages each client opened: at most PAGES_PER_CLIENT new ones in any PAGES_WINDOW seconds. Memory stays
    bounded: a client's pages known are its most recently used (a page in use stays known), and clients are capped,
    the least recently seen going first (a client forgotten only starts counting again)."""

    CLIENTS_KEPT = 10_000

    def __init__(self):
        self._lock = threading.Lock()
        self._clients: OrderedDict[str, tuple[OrderedDict, deque]] = OrderedDict()  # client -> (pages, new pages' times)

    def refusal(self, client: str, page: str | None, now: float) -> float | None:
        """None, the page noted as the client's; or the seconds until this client may open a new page."""
        with self._lock:
            known, opened = self._clients.pop(client, None) or (OrderedDict(), deque())
            self._clients[client] = (known, opened)  # most recently seen last
            while len(self._clients) > self.CLIENTS_KEPT:
                self._clients.popitem(last=False)
            if page is not None and page in known:
                known.move_to_end(page)
                return None
            while opened and now - opened[0] >= PAGES_WINDOW:
                opened.popleft()
            if len(opened) >= PAGES_PER_CLIENT:
                return PAGES_WINDOW - (now - opened[0])
            opened.append(now)
            known[page or secrets.token_hex(8)] = now
            while len(known) > 4 * PAGES_PER_CLIENT:
                known.popitem(last=False)
            return None


def _page_of(body: bytes) -> str | None:
    """The page (session id) an event's JSON body names; None: none (Gradio then makes a new one)."""
    try:
        page = json.loads(body).get("session_hash")
    except (ValueError, AttributeError, RecursionError):  # not JSON, not an object, nested past the parser
        return None
    return page if isinstance(page, str) else None


class RequestGuard:
    def __init__(self, app, max_body: int = MAX_BODY, space: bool = False, proxy_hops: int = 1):
        self.app, self.max_body = app, max_body
        self.space, self.proxy_hops = space, proxy_hops  # how the client is read (evalkit.ui.auth.client_key)
        self.pages = _Pages()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        # before any copy of the scope below: a copy shares this dict, which Starlette's request.state reads
        scope.setdefault("state", {})[ARRIVED] = time.monotonic()
        path = scope.get("path", "")
        if path.rstrip("/").endswith("/deep_link") or "deep_links" in path:
            return await _answer(send, 404, "not found")
        if query := scope.get("query_string", b""):
            # decoded as Starlette decodes it for Gradio (percent-escapes, '+'): `deep%5Flink` is `deep_link` there
            params = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
            if any(k == DEEP_LINK for k, _v in params):
                kept = [(k, v) for k, v in params if k != DEEP_LINK]
                scope = dict(scope, query_string=urlencode(kept).encode("latin-1"))
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        too_large = f"request body over {self.max_body // 1024} KB"
        if declared is not None:
            if not declared.isdigit() or int(declared) > self.max_body:
                return await _answer(send, 413, too_large)
        elif scope.get("method") not in _BODY_METHODS and b"transfer-encoding" not in headers:
            return await self.app(scope, receive, send)  # no body (a page, the event stream)
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return await _answer(send, 413, too_large)
            chunks.append(chunk)
            more = message.get("more_body", False)
        body, handed = b"".join(chunks), False
        if scope.get("method") == "POST" and _EVENT_ROUTE.search(path):
            wait = self.pages.refusal(self._client(scope), _page_of(body), time.monotonic())
            if wait is not None:
                return await _answer(send, 429, pages_full(wait))

        async def replay():
            nonlocal handed
            if not handed:
                handed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: a disconnect, when it comes

        return await self.app(scope, replay, send)

    def _client(self, scope) -> str:
        from starlette.requests import Request

        from .auth import client_key

        return client_key(Request(scope), self.space, self.proxy_hops)
