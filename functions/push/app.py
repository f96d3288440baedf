"""Lambda entry point of the push function: the WebSocket API's routes ($connect,
$disconnect, ping; groupcoord.http.websocket)."""

from groupcoord.http.websocket import make_push_handler

lambda_handler = make_push_handler()
