"""`groupcoord dashboard`: a live web view of a coordinator's groups (docs/dashboard.md).

Client-side tooling, like client/ and the admin CLI: it calls a coordinator over HTTP (its
describe-group-activity extension, list-groups) and is not part of the Lambda layer. Needs
werkzeug and Jinja2 (the `local` extra)."""
