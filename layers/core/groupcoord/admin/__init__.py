"""Admin commands kept beside admin_cli.py in modules of their own (admin_cli.py wires them):
client-side, standard library only (but for kcl/lease_table.py, which imports boto3, the
`kinesis` extra, when a command runs), left out of the Lambda layer as admin_cli.py is."""
