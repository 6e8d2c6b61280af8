"""Fetch one repository's ``config.json`` from the Hugging Face Hub (or a mirror). urllib only.

Only ``{endpoint}/{repo_id}/resolve/{revision}/config.json`` is requested: no weights, no code.
The endpoint is ``HF_ENDPOINT`` when set (as huggingface_hub reads it), else https://huggingface.co;
a token comes from ``HF_TOKEN`` (gated and private repos) and is never sent to another host
after a redirect. ``HF_HUB_OFFLINE=1`` means no request at all. Every failure is a ``HubError``
whose message says what to do next (most often: paste the config.json instead).
"""

import os
import re
import urllib.error
import urllib.parse
import urllib.request

from kvplan.hf_config import MAX_CONFIG_BYTES, load_config_text

DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT_S = 10.0
# An HF repo id: "owner/name", letters, digits, '-', '_', '.'; no '..' or '--' runs, no leading or
# trailing '.'/'-' (huggingface_hub's validate_repo_id, with the 96-character limit).
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
REPO_ID_RE = re.compile(rf"^{_PART}/{_PART}$")
REVISION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$")


class HubError(Exception):
    """A fetch that did not give a config. ``offline`` is True when the Hub could not be reached."""

    def __init__(self, message: str, offline: bool = False):
        super().__init__(message)
        self.offline = offline


def check_repo_id(repo_id: str) -> str:
    repo_id = str(repo_id).strip()
    if not REPO_ID_RE.fullmatch(repo_id) or ".." in repo_id or "--" in repo_id:
        raise HubError(f"{repo_id[:120]!r} is not a Hub model id; expected 'owner/name', e.g. 'Qwen/Qwen3-8B'")
    return repo_id


def endpoint(env: dict | None = None) -> str:
    env = os.environ if env is None else env
    value = (env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).strip().rstrip("/")
    if urllib.parse.urlsplit(value).scheme not in ("http", "https"):
        raise HubError(f"HF_ENDPOINT={value!r} is not an http(s) URL")
    return value


def endpoint_or_error(env: dict | None = None) -> str:
    try:
        return endpoint(env)
    except HubError as exc:
        return f"(unusable: {exc})"


def config_url(repo_id: str, revision: str = "main", env: dict | None = None) -> str:
    repo_id = check_repo_id(repo_id)
    if not REVISION_RE.fullmatch(str(revision)) or ".." in revision:
        raise HubError(f"{revision[:100]!r} is not a revision (branch, tag or commit)")
    return f"{endpoint(env)}/{repo_id}/resolve/{urllib.parse.quote(revision, safe='')}/config.json"


class _DropAuthOnOtherHost(urllib.request.HTTPRedirectHandler):
    """Follow redirects (renamed repos, CDN) but keep the token on the host (and scheme) it was meant
    for, and follow only http(s): never ftp:// or file:// (urllib would follow ftp)."""

    max_redirections = 5

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        target = urllib.parse.urlsplit(urllib.parse.urljoin(req.full_url, newurl))
        if target.scheme not in ("http", "https"):
            raise HubError(f"the Hub redirected to a {target.scheme or 'relative'}: URL; only http(s) is followed")
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        origin = urllib.parse.urlsplit(req.full_url)
        if new is not None and (target.netloc, target.scheme) != (origin.netloc, origin.scheme):
            new.remove_header("Authorization")
        return new


def fetch_config(repo_id: str, revision: str = "main", *, env: dict | None = None,
                 timeout: float = TIMEOUT_S, max_bytes: int = MAX_CONFIG_BYTES) -> dict:
    """The parsed config.json of ``repo_id``. Raises HubError (``offline=True`` when unreachable)."""
    env = os.environ if env is None else env
    url = config_url(repo_id, revision, env)
    if str(env.get("HF_HUB_OFFLINE", "")).strip().lower() in ("1", "true", "yes", "on"):
        raise HubError("HF_HUB_OFFLINE is set, so the Hub is not contacted; paste or upload the config.json "
                       "instead", offline=True)
    request = urllib.request.Request(url, headers={"User-Agent": "kvplan (config.json only)"})
    token = (env.get("HF_TOKEN") or "").strip()
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    opener = urllib.request.build_opener(_DropAuthOnOtherHost)
    try:
        with opener.open(request, timeout=timeout) as response:
            body = response.read(max_bytes + 1)
    except urllib.error.HTTPError as exc:
        raise HubError(_http_message(exc.code, repo_id, revision, bool(token))) from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HubError(f"cannot reach {endpoint(env)} ({reason}): you seem to be offline. "
                       "Paste or upload the config.json instead.", offline=True) from None
    if len(body) > max_bytes:
        raise HubError(f"config.json of {repo_id} is larger than {max_bytes:,} bytes; not a model config")
    return load_config_text(body)


def _http_message(code: int, repo_id: str, revision: str, has_token: bool) -> str:
    if code in (401, 403):
        hint = ("your HF_TOKEN has no access to it (accept the license on the model page)" if has_token
                else "set HF_TOKEN in the environment of the app")
        return f"{repo_id} is gated or private (HTTP {code}): {hint}, or paste the config.json"
    if code == 404:
        return f"no config.json in {repo_id} at {revision} (HTTP 404): check the id, or paste the config.json"
    return f"the Hub answered HTTP {code} for {repo_id}; try again later or paste the config.json"
