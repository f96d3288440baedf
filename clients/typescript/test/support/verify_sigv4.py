"""Checks a SigV4 signature the TypeScript client made, with botocore's signer (an independent
implementation): reads the request as the server received it, as JSON on stdin ({method, url,
headers, body, accessKey, secretKey, region}), signs the headers the request says it signed,
at the request's X-Amz-Date, and prints {"expected": <signature>, "got": <signature>}.
"""

from __future__ import annotations

import json
import re
import sys

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def main() -> int:
    seen = json.load(sys.stdin)
    headers = {k.lower(): v for k, v in seen["headers"].items()}
    match = re.search(r"SignedHeaders=([^,]+), Signature=([0-9a-f]+)", headers["authorization"])
    assert match, headers["authorization"]
    signed = match.group(1).split(";")
    request = AWSRequest(
        method=seen["method"],
        url=seen["url"],
        data=seen["body"].encode("utf-8"),
        headers={name: headers[name] for name in signed},
    )
    request.context["timestamp"] = headers["x-amz-date"]
    token = headers.get("x-amz-security-token")
    credentials = Credentials(seen["accessKey"], seen["secretKey"], token)
    auth = SigV4Auth(credentials, "execute-api", seen["region"])
    to_sign = auth.string_to_sign(request, auth.canonical_request(request))
    expected = auth.signature(to_sign, request)
    print(json.dumps({"expected": expected, "got": match.group(2), "signedHeaders": signed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
