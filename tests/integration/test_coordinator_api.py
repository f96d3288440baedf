"""find-coordinator and list-groups over HTTP."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.support.api import Api

# An HTTP-contract test: `serve` on the DynamoDB endpoint.
pytestmark = pytest.mark.http_contract


def test_find_coordinator_names_this_endpoint_for_every_key(api: Api) -> None:
    body = api.ok("find-coordinator", {"keyType": 0, "coordinatorKeys": ["g1", "g2"]})
    assert [c["key"] for c in body["coordinators"]] == ["g1", "g2"]
    for coordinator in body["coordinators"]:
        assert coordinator["errorCode"] == 0
        assert coordinator["endpoint"] == api.base_url
        assert isinstance(coordinator["coordinatorEpoch"], int)
        parts = urlsplit(api.base_url)
        assert (coordinator["host"], coordinator["port"]) == (parts.hostname, parts.port)
    # The epoch is stable while the coordinator stays where it is.
    again = api.ok("find-coordinator", {"coordinatorKeys": ["g1"]})
    assert (
        again["coordinators"][0]["coordinatorEpoch"] == body["coordinators"][0]["coordinatorEpoch"]
    )


def test_find_coordinator_refuses_non_group_key_types(api: Api) -> None:
    body = api.ok("find-coordinator", {"keyType": 1, "coordinatorKeys": ["txn"]})
    assert body["coordinators"][0]["errorCode"] == 42
    assert "keyType" in body["coordinators"][0]["errorMessage"]


def test_list_groups_answers_with_the_groups_it_knows(api: Api) -> None:
    body = api.ok("list-groups", {})
    assert body["errorCode"] == 0
    assert isinstance(body["groups"], list)
    filtered = api.ok("list-groups", {"statesFilter": ["NoSuchState"], "typesFilter": []})
    assert filtered["groups"] == []
