"""SigV4 signing for a deployed coordinator, with botocore's credential chain. Either front
door of template.yaml: an API Gateway HTTP API (IAM auth, service `execute-api`) or a Lambda
function URL (AuthType AWS_IAM, service `lambda`); the service and the region are read off
the URL's host (`signing_scope`).

The only module of the client that needs a package outside the standard library: botocore,
from the `sigv4` extra (`pip install 'groupcoord[sigv4]'`). transport.py imports it only when
requests are signed (an https URL, or sign=True) and turns a missing botocore into a
GroupcoordError that names the extra.
"""

from __future__ import annotations

import re
import threading
from urllib.parse import urlsplit

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from .errors import GroupcoordError

EXECUTE_API, LAMBDA = "execute-api", "lambda"
# <url-id>.lambda-url.<region>.on.aws and <api-id>.execute-api.<region>.amazonaws.com[.cn]
_FUNCTION_URL_HOST = re.compile(r"[a-z0-9]+\.lambda-url\.(?P<region>[a-z0-9-]+)\.on\.aws")
_EXECUTE_API_HOST = re.compile(
    r"[a-z0-9]+\.execute-api\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?"
)


def signing_scope(url: str) -> tuple[str, str | None]:
    """(service, region or None) to sign a request to this URL for: a function URL is signed
    for `lambda` in its region, anything else for `execute-api` (an HTTP API, or a custom
    domain in front of one), in the region its host names, if it names one."""
    host = (urlsplit(url).hostname or "").lower()
    match = _FUNCTION_URL_HOST.fullmatch(host)
    if match:
        return LAMBDA, match["region"]
    match = _EXECUTE_API_HOST.fullmatch(host)
    return EXECUTE_API, match["region"] if match else None


class Signer:
    """Signs with botocore's credential chain (env, profile, SSO, container and instance
    roles); refreshable credentials are refreshed. `region`, when given, is used for every
    URL; otherwise the URL's own region, else the profile's, else us-east-1."""

    def __init__(self, region: str | None) -> None:
        session = botocore.session.get_session()
        self.credentials = session.get_credentials()
        if self.credentials is None:
            raise GroupcoordError(
                "no AWS credentials found to sign the request with (set AWS_PROFILE, "
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or use an instance role)"
            )
        self.region = region
        self.default_region = session.get_config_variable("region") or "us-east-1"
        self._lock = threading.Lock()

    def sign(
        self, url: str, data: bytes, headers: dict[str, str], method: str = "POST"
    ) -> dict[str, str]:
        service, url_region = signing_scope(url)
        region = self.region or url_region or self.default_region
        with self._lock:
            frozen = self.credentials.get_frozen_credentials()
        request = AWSRequest(method=method, url=url, data=data, headers=headers)
        SigV4Auth(frozen, service, region).add_auth(request)
        return dict(request.headers.items())
