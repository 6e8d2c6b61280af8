"""A local stand-in for the Hugging Face Hub: serves config.json files on 127.0.0.1 (no network)."""

import contextlib
import http.server
import json
import threading

from kvplan.hf_config import MAX_CONFIG_BYTES
from kvplan.presets import preset_config

TOKEN = "hf_test_token"
CONFIGS = {
    "acme/tiny-llama": dict(preset_config("llama-3.2-1b"), _name_or_path="acme/tiny-llama"),
    "acme/gated": dict(preset_config("qwen3-0.6b"), _name_or_path="acme/gated"),
}


class Handler(http.server.BaseHTTPRequestHandler):
    seen: list[dict] = []

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        Handler.seen.append({"path": self.path, "host": self.headers.get("Host"),
                             "authorization": self.headers.get("Authorization")})
        parts = self.path.strip("/").split("/")
        repo = "/".join(parts[:2])
        if len(parts) != 5 or parts[2:] != ["resolve", "main", "config.json"]:
            return self._send(404, b"not found")
        if repo == "acme/gated" and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._send(401, b"gated")
        if repo == "acme/moved":  # redirect to the same server under another host name
            port = self.server.server_address[1]
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{port}/acme/tiny-llama/resolve/main/config.json")
            self.end_headers()
            return None
        if repo in ("acme/to-ftp", "acme/to-file", "acme/loop", "acme/to-https-other"):
            port = self.server.server_address[1]
            self.send_response(302)
            self.send_header("Location", {"acme/to-ftp": f"ftp://127.0.0.1:{port}/config.json",
                                          "acme/to-file": "file:///etc/passwd",
                                          "acme/loop": self.path,
                                          "acme/to-https-other": "https://127.0.0.2:1/config.json"}[repo])
            self.end_headers()
            return None
        if repo == "acme/huge":
            return self._send(200, b"{" + b" " * (MAX_CONFIG_BYTES + 1) + b"}")
        if repo not in CONFIGS:
            return self._send(404, b"no such repo")
        return self._send(200, json.dumps(CONFIGS[repo]).encode())

    def _send(self, code: int, body: bytes):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def serve():
    """Yields the endpoint URL (http://127.0.0.1:PORT)."""
    Handler.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_port_endpoint() -> str:
    """An endpoint nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
