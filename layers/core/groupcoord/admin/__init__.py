"""Admin commands kept beside admin_cli.py in modules of their own (admin_cli.py wires them):
client-side, standard library only, left out of the Lambda layer as admin_cli.py is."""
