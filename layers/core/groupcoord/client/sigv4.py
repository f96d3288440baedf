"""SigV4 signing for a deployed coordinator (API Gateway HTTP API, IAM auth, service
execute-api), with botocore's credential chain.

The only module of the client that needs a package outside the standard library: botocore,
from the `sigv4` extra (`pip install 'groupcoord[sigv4]'`). transport.py imports it only when
requests are signed (an https URL, or sign=True) and turns a missing botocore into a
GroupcoordError that names the extra.
"""

from __future__ import annotations

import threading

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from .errors import GroupcoordError


class Signer:
    """Signs with botocore's credential chain (env, profile, SSO, container and instance
    roles); refreshable credentials are refreshed."""

    def __init__(self, region: str | None) -> None:
        session = botocore.session.get_session()
        self.credentials = session.get_credentials()
        if self.credentials is None:
            raise GroupcoordError(
                "no AWS credentials found to sign the request with (set AWS_PROFILE, "
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or use an instance role)"
            )
        self.region = region or session.get_config_variable("region") or "us-east-1"
        self._lock = threading.Lock()

    def sign(self, url: str, data: bytes, headers: dict[str, str]) -> dict[str, str]:
        with self._lock:
            frozen = self.credentials.get_frozen_credentials()
        request = AWSRequest(method="POST", url=url, data=data, headers=headers)
        SigV4Auth(frozen, "execute-api", self.region).add_auth(request)
        return dict(request.headers.items())
