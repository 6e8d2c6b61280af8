"""A local stand-in for the Hugging Face Hub on 127.0.0.1 (no network), enough for huggingface_hub:

- ``HEAD`` / ``GET /{repo}/resolve/{revision}/{file}`` with the headers huggingface_hub reads
  (``X-Repo-Commit``, ``ETag``, ``Content-Length``) and ``Range: bytes=a-b`` answers (206), as
  ``parse_safetensors_file_metadata`` asks for the first 100 kB of a safetensors file;
- ``GET /api/models/{repo}[/revision/{rev}]``: the repo's file list (``siblings``);
- errors as the Hub sends them: ``X-Error-Code`` GatedRepo (401 without the token), RepoNotFound,
  EntryNotFound, RevisionNotFound (404).

Repos are ``CONFIGS`` (config.json only) and ``FILES`` ({repo: {filename: bytes}}), which a test may
extend through ``serve(files=...)``. Every request is logged in ``Handler.seen``.
"""

import contextlib
import hashlib
import http.server
import json
import re
import threading

from kvplan.hf_config import MAX_CONFIG_BYTES
from kvplan.presets import preset_config

TOKEN = "hf_test_token"
CONFIGS = {
    "acme/tiny-llama": dict(preset_config("llama-3.2-1b"), _name_or_path="acme/tiny-llama"),
    "acme/gated": dict(preset_config("qwen3-0.6b"), _name_or_path="acme/gated"),
}
GATED = {"acme/gated", "acme/gated-ckpt"}
FILES: dict[str, dict[str, bytes]] = {}
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


def commit_of(repo: str) -> str:
    return hashlib.sha1(repo.encode()).hexdigest()


def _repo_files(repo: str) -> dict[str, bytes] | None:
    files = dict(Handler.files.get(repo, {}))
    if repo in CONFIGS:
        files.setdefault("config.json", json.dumps(CONFIGS[repo]).encode())
    if repo == "acme/huge":
        files["config.json"] = b"{" + b" " * (MAX_CONFIG_BYTES + 1) + b"}"
    return files or None


class Handler(http.server.BaseHTTPRequestHandler):
    seen: list[dict] = []
    files: dict[str, dict[str, bytes]] = {}

    def log_message(self, *args):  # keep test output clean
        pass

    def do_HEAD(self):
        self._answer(head=True)

    def do_GET(self):
        self._answer(head=False)

    def _answer(self, head: bool):
        Handler.seen.append({"method": "HEAD" if head else "GET", "path": self.path, "host": self.headers.get("Host"),
                             "authorization": self.headers.get("Authorization"), "range": self.headers.get("Range")})
        self.head = head
        parts = self.path.split("?")[0].strip("/").split("/")
        if parts[:2] == ["api", "models"]:
            return self._api(parts[2:])
        repo = "/".join(parts[:2])
        if len(parts) < 5 or parts[2] != "resolve":
            return self._send(404, b"not found", {"X-Error-Code": "RepoNotFound"})
        revision, filename = parts[3], "/".join(parts[4:])
        if repo in GATED and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._send(401, b"gated", {"X-Error-Code": "GatedRepo"})
        port = self.server.server_address[1]
        if repo == "acme/moved":  # redirect to the same server under another host name
            return self._redirect(f"http://localhost:{port}/acme/tiny-llama/resolve/main/{filename}",
                                  linked="acme/tiny-llama", filename=filename)
        if repo in ("acme/to-ftp", "acme/to-file", "acme/loop"):
            return self._redirect({"acme/to-ftp": f"ftp://127.0.0.1:{port}/config.json",
                                   "acme/to-file": "file:///etc/passwd",
                                   "acme/loop": self.path}[repo])
        files = _repo_files(repo)
        if files is None:
            return self._send(404, b"no such repo", {"X-Error-Code": "RepoNotFound"})
        if revision != "main" and revision != commit_of(repo):
            return self._send(404, b"no such revision", {"X-Error-Code": "RevisionNotFound"})
        if filename not in files:
            return self._send(404, b"no such file", {"X-Error-Code": "EntryNotFound",
                                                      "X-Repo-Commit": commit_of(repo)})
        body = files[filename]
        headers = {"X-Repo-Commit": commit_of(repo), "ETag": f'"{hashlib.sha256(body).hexdigest()}"',
                   "Accept-Ranges": "bytes"}
        wanted = _RANGE.match(self.headers.get("Range") or "")
        if wanted:
            start = int(wanted[1])
            stop = min(int(wanted[2]) if wanted[2] else len(body) - 1, len(body) - 1)
            headers["Content-Range"] = f"bytes {start}-{stop}/{len(body)}"
            return self._send(206, body[start:stop + 1], headers)
        return self._send(200, body, headers)

    def _api(self, parts: list[str]):
        repo = "/".join(parts[:2])
        files = _repo_files(repo)
        if files is None:
            return self._send(404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"})
        info = {"id": repo, "modelId": repo, "sha": commit_of(repo), "private": False,
                "siblings": [{"rfilename": name} for name in sorted(files)]}
        return self._send(200, json.dumps(info).encode())

    def _redirect(self, location: str, linked: str | None = None, filename: str = "config.json"):
        self.send_response(302)
        self.send_header("Location", location)
        if linked:  # as the Hub does for a file served elsewhere: the target's commit, etag and size
            body = _repo_files(linked)[filename]
            self.send_header("X-Repo-Commit", commit_of(linked))
            self.send_header("X-Linked-Etag", f'"{hashlib.sha256(body).hexdigest()}"')
            self.send_header("X-Linked-Size", str(len(body)))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send(self, code: int, body: bytes, headers: dict | None = None):
        self.send_response(code)
        self.send_header("Content-Type", "application/json" if body[:1] in (b"{", b"[") else "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if not self.head:
            self.wfile.write(body)


@contextlib.contextmanager
def serve(files: dict[str, dict[str, bytes]] | None = None):
    """Yields the endpoint URL (http://127.0.0.1:PORT). ``files``: extra repos, {repo: {filename: bytes}}."""
    Handler.seen = []
    Handler.files = {**FILES, **(files or {})}
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
