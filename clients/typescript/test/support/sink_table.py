"""A sink table for the TypeScript tests of commits with writes (docs/exactly-once.md), in the
coordinator's DynamoDB (the DynamoDB Local endpoint of the test), and its items read back.

    python sink_table.py create <endpoint> <table>    a table keyed by the string `k`
    python sink_table.py read <endpoint> <table>      {k: n} of every item, as JSON
"""

from __future__ import annotations

import json
import sys

import boto3


def main() -> int:
    action, endpoint, table = sys.argv[1:4]
    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    if action == "create":
        client.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    else:
        items = client.scan(TableName=table, ConsistentRead=True)["Items"]
        print(json.dumps({i["k"]["S"]: int(i["n"]["N"]) for i in items if "n" in i}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
