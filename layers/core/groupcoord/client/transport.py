"""HTTP to the coordinator: JSON bodies, timeouts on every call, jittered retries, Retry-After
on 429, and SigV4 signing for a deployed API (IAM auth). Standard library only; signing needs
botocore (the `sigv4` extra), imported from sigv4.py only when requests are signed."""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .errors import CoordinatorUnavailable, GroupcoordError, InvalidRequest

if TYPE_CHECKING:
    from .sigv4 import Signer

RETRYABLE_STATUS = {429, 500, 502, 503, 504}

TIMEOUT_HEADER = "Groupcoord-Timeout-Ms"
WRITE_MARGIN_S = 2.0
"""The longest a DynamoDB write the server has already started may take to land, plus the
request's way to API Gateway (the server's groupcoord.deadline.WRITE_MARGIN_MS). Every attempt
tells the server its budget, the attempt's timeout less this margin, in TIMEOUT_HEADER: the
server starts no write after receipt + budget.

Why no write of an abandoned attempt can land after the next request: the server's deadline
is receipt + budget = send + transit + budget; its last write starts by then and lands within
w, so by send + budget + transit + w <= send + budget + margin = send + attempt timeout, which
is when the client gives up on the attempt. Every write of an attempt has landed before the
client sends anything after it (a retry, or the caller's next, newer commit). An attempt
shorter than the margin sends the least budget, 1 ms, and the guarantee narrows to writes
landing within the rest."""

NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, OSError)
"""What a request that never got an answer raises: refused or reset connections, timeouts,
a response cut short. URLError and TimeoutError are OSErrors; HTTPException is not."""


@dataclass
class Reply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


class Transport:
    """POSTs `/v1/<api>` to a base URL; retries what is safe to retry.

    Every API of the contract is safe to re-send: joins and syncs are idempotent by member id,
    a re-sent heartbeat is answered from the member's state (Kafka's lost-response rule), a
    commit writes the same offsets again. So network errors, 429 (after its Retry-After) and
    5xx are retried with jittered exponential backoff, up to `retries` more attempts and within
    (retries + 1) * timeout_s overall; 4xx are not. Every attempt carries its write budget
    (TIMEOUT_HEADER, see WRITE_MARGIN_S): a server past it answers 503, retried as any.
    """

    def __init__(
        self,
        base_url: str,
        *,
        client_id: str = "groupcoord-client",
        timeout_s: float = 10.0,
        retries: int = 5,
        backoff_s: float = 0.05,
        max_backoff_s: float = 2.0,
        sign: bool | None = None,
        region: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        # A plain-HTTP local endpoint (groupcoord serve) is not signed; AWS endpoints are.
        self.sign = parts.scheme == "https" if sign is None else sign
        self.region = region
        # Sent with every request besides the protocol's own (e.g. a local serve's principal
        # header, a test aid).
        self.headers = dict(headers or {})
        self._signer: Signer | None = None
        if self.sign:
            _signer_class()  # fail now, not at the first request, when botocore is missing

    def with_base_url(self, base_url: str) -> Transport:
        """The same settings (and credentials) for another endpoint (the group's coordinator)."""
        clone = Transport(
            base_url,
            client_id=self.client_id,
            timeout_s=self.timeout_s,
            retries=self.retries,
            backoff_s=self.backoff_s,
            max_backoff_s=self.max_backoff_s,
            sign=self.sign,
            region=self.region,
            headers=self.headers,
        )
        clone._signer = self._signer
        return clone

    def call(
        self,
        api: str,
        body: dict[str, Any],
        *,
        timeout_s: float | None = None,
        retries: int | None = None,
    ) -> Reply:
        """One API call: 200 and 202 are returned; 4xx raise; 429/5xx/network are retried.

        Raises CoordinatorUnavailable when no answer came (or only 429/5xx) within the
        retries, InvalidRequest on 400, GroupcoordError on any other status."""
        per_attempt = timeout_s or self.timeout_s
        retries = self.retries if retries is None else retries
        deadline = time.monotonic() + per_attempt * (retries + 1)
        attempt = 0
        while True:
            attempt += 1
            # The first attempt has its whole timeout (what the caller asked for, so its budget
            # is exact: a remaining time microseconds short would floor the budget a ms short).
            remaining = per_attempt if attempt == 1 else deadline - time.monotonic()
            try:
                reply = self._once(api, body, max(0.05, min(per_attempt, remaining)))
            except NETWORK_ERRORS as error:
                if attempt > retries or time.monotonic() >= deadline:
                    raise CoordinatorUnavailable(
                        f"{api}: {self.base_url} did not answer: {_reason(error)}"
                    ) from error
                self._sleep(attempt, deadline=deadline)
                continue
            if reply.status in (200, 202):
                return reply
            retryable = reply.status in RETRYABLE_STATUS
            if retryable and attempt <= retries and time.monotonic() < deadline:
                self._sleep(attempt, _retry_after_s(reply.headers), deadline)
                continue
            message = f"{api}: HTTP {reply.status}: {reply.body.get('errorMessage', reply.body)}"
            if reply.status == 400:
                raise InvalidRequest(message, status=400)
            if retryable:
                raise CoordinatorUnavailable(message, status=reply.status)
            raise GroupcoordError(message, status=reply.status)

    def _sleep(self, attempt: int, at_least_s: float | None = None, deadline: float = 0) -> None:
        backoff = random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2**attempt))
        pause = max(backoff, at_least_s or 0.0)
        if deadline:
            # Retry-After longer than the call may last: wait what is left, then fail.
            pause = min(pause, max(0.0, deadline - time.monotonic()))
        time.sleep(pause)

    def handshake_headers(self, url: str) -> dict[str, str]:
        """The headers of a WebSocket handshake to `url` (the push channel's `$connect`): these
        transport's own, SigV4-signed as a GET of that URL when its requests are signed (a
        WebSocket API with IAM auth: `execute-api`, in the region its host names)."""
        if not self.sign:
            return dict(self.headers)
        if self._signer is None:
            self._signer = _signer_class()(self.region)
        # ws:// and wss:// sign as http:// and https://: the same request line and Host.
        signed_url = "http" + url[2:] if url.startswith("ws") else url
        return self._signer.sign(signed_url, b"", dict(self.headers), method="GET")

    def _once(self, api: str, body: dict[str, Any], timeout_s: float) -> Reply:
        url = f"{self.base_url}/v1/{api}"
        data = json.dumps(body).encode("utf-8")
        headers = {
            **self.headers,
            "Content-Type": "application/json",
            "Kafka-Client-Id": self.client_id,
            TIMEOUT_HEADER: str(budget_ms(timeout_s)),
        }
        if self.sign:
            if self._signer is None:
                self._signer = _signer_class()(self.region)
            headers = self._signer.sign(url, data, headers)
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return Reply(response.status, _json(response.read()), _lower(response.headers))
        except urllib.error.HTTPError as error:
            try:
                return Reply(error.code, _json(error.read()), _lower(error.headers))
            finally:
                error.close()


SIGV4_EXTRA_MISSING = (
    "signing requests with SigV4 (an https URL, or sign=True) needs botocore: "
    "pip install 'groupcoord[sigv4]' (or sign=False for an endpoint without IAM auth)"
)


def budget_ms(timeout_s: float) -> int:
    """The TIMEOUT_HEADER value of an attempt with this timeout (WRITE_MARGIN_S says why)."""
    # The server takes 1..900,000 ms (15 minutes, Lambda's longest run).
    return min(900_000, max(1, int((timeout_s - WRITE_MARGIN_S) * 1000)))


def _signer_class() -> type[Signer]:
    """sigv4.Signer, imported on first use: botocore is an optional dependency."""
    try:
        from .sigv4 import Signer
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] != "botocore":
            raise
        raise GroupcoordError(SIGV4_EXTRA_MISSING) from error
    return Signer


def _retry_after_s(headers: dict[str, str]) -> float | None:
    """Retry-After as seconds or as an HTTP date (RFC 9110); None when absent or unreadable."""
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _reason(error: BaseException) -> str:
    if isinstance(error, urllib.error.URLError) and error.reason is not None:
        return str(error.reason)
    return str(error) or type(error).__name__


def _json(raw: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(raw or b"{}")
    except ValueError:
        return {"errorMessage": raw[:200].decode("utf-8", "replace")}
    return parsed if isinstance(parsed, dict) else {"body": parsed}


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in dict(headers or {}).items()}
