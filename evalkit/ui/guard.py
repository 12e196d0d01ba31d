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
  arrived before it (evalkit.ui.session._Ended)."""

from __future__ import annotations

import time
from urllib.parse import parse_qsl, urlencode

# The largest request body the app takes. A rating (every answer and a 2,000-character comment) is about 10 KB.
MAX_BODY = 64 * 1024
_BODY_METHODS = {"POST", "PUT", "PATCH"}
DEEP_LINK = "deep_link"  # the query parameter Gradio's page route reads a deep link from
ARRIVED = "evalkit_arrived"  # the request's state key: time.monotonic() when it reached this middleware


def arrived_at(request) -> float:
    """When the request behind a handler's gr.Request (for a queued event: its queue join) reached the server;
    now, where it was not stamped (a handler called without the middleware)."""
    scope = getattr(getattr(request, "request", None), "scope", None)
    at = (scope.get("state") or {}).get(ARRIVED) if isinstance(scope, dict) else None
    return at if isinstance(at, float) else time.monotonic()


async def _answer(send, status: int, text: str) -> None:
    body = ('{"detail": "' + text + '"}').encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    def __init__(self, app, max_body: int = MAX_BODY):
        self.app, self.max_body = app, max_body

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

        async def replay():
            nonlocal handed
            if not handed:
                handed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: a disconnect, when it comes

        return await self.app(scope, replay, send)
