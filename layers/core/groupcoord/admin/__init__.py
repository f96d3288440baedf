"""The admin commands of `groupcoord` (admin_cli.py builds their parsers and runs them), one
module per command group: topics.py, groups.py (streams_groups.py: a streams group's tables),
offsets.py (offsets_reset.py, offsets_transfer.py over the CSV of offsets_csv.py,
kinesis_shards.py: a Kinesis-backed topic's shards), acls.py (acl_model.py), kcl/ (`kinesis
import-kcl|export-kcl`); common.py holds the shared options and checks, output.py the printing.
They parse, call the admin client (client/admin.py) and print. Client-side, standard library
only (but for kcl/lease_table.py, which imports boto3, the `kinesis` extra, when a command
runs), left out of the Lambda layer as admin_cli.py is."""
