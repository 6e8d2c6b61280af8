"""Fetch one repository's ``config.json`` from the Hugging Face Hub (or a mirror), through huggingface_hub.

Only ``{endpoint}/{repo_id}/resolve/{revision}/config.json`` is requested (a HEAD, then the file): no
weights, no code. Settings are read from the environment at each call (``env``, default ``os.environ``),
not from huggingface_hub's import-time constants, so the app honours a changed environment:

- ``HF_ENDPOINT``: the endpoint (a mirror), else https://huggingface.co;
- ``HF_TOKEN``: the token for gated and private repos; huggingface_hub keeps it on Hub hosts and drops
  it when a redirect leaves them (a CDN); no stored token file is read;
- ``HF_HUB_CACHE`` / ``HF_HOME``: the cache (``$HF_HOME/hub``, default ~/.cache/huggingface/hub);
- ``HF_HUB_OFFLINE=1``: no request at all; a config already in the cache is used, else a clear
  "offline" error.

The repo id and revision are checked before any URL is built; a redirect to anything but http(s) is
refused; a config.json over ``MAX_CONFIG_BYTES`` is refused before it is downloaded (its size from the
HEAD). Every failure is a ``HubError`` whose message says what to do next (most often: paste the
config.json instead). ``kvplan.web.checkpoint`` reads safetensors headers through the same settings.
"""

import contextlib
import os
import re
import threading
import urllib.parse
from pathlib import Path

from kvplan.hf_config import MAX_CONFIG_BYTES, load_config_text

DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT_S = 10.0
# An HF repo id: "owner/name", letters, digits, '-', '_', '.'; no '..' or '--' runs, no leading or
# trailing '.'/'-' (huggingface_hub's validate_repo_id, with the 96-character limit).
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
REPO_ID_RE = re.compile(rf"^{_PART}/{_PART}$")
REVISION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$")
_TRUE = ("1", "true", "yes", "on")


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


def check_revision(revision: str) -> str:
    if not REVISION_RE.fullmatch(str(revision)) or ".." in revision:
        raise HubError(f"{str(revision)[:100]!r} is not a revision (branch, tag or commit)")
    return revision


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


def token(env: dict | None = None) -> str | bool:
    """HF_TOKEN, or False: huggingface_hub then sends no token (it would otherwise read a stored one)."""
    env = os.environ if env is None else env
    return (env.get("HF_TOKEN") or "").strip() or False


def cache_dir(env: dict | None = None) -> str:
    """huggingface_hub's cache folder, from HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    env = os.environ if env is None else env
    if env.get("HF_HUB_CACHE"):
        return os.path.expanduser(env["HF_HUB_CACHE"])
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                                              "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def is_offline(env: dict | None = None) -> bool:
    env = os.environ if env is None else env
    return str(env.get("HF_HUB_OFFLINE", "")).strip().lower() in _TRUE


def config_url(repo_id: str, revision: str = "main", env: dict | None = None) -> str:
    repo_id = check_repo_id(repo_id)
    check_revision(revision)
    return f"{endpoint(env)}/{repo_id}/resolve/{urllib.parse.quote(revision, safe='')}/config.json"


# huggingface_hub reads HF_HUB_OFFLINE once, at import; kvplan reads it per call. A call that is online by
# ``env`` clears the library's flag for its duration (under this lock, so concurrent calls agree) and sets
# it back after.
_MODE_LOCK = threading.Lock()


@contextlib.contextmanager
def online():
    from huggingface_hub import constants

    with _MODE_LOCK:
        saved = constants.HF_HUB_OFFLINE
        constants.HF_HUB_OFFLINE = False
        try:
            yield
        finally:
            constants.HF_HUB_OFFLINE = saved


def translate(exc: BaseException, repo_id: str, revision: str, filename: str, env: dict | None = None,
              has_token: bool = False) -> HubError:
    """The HubError for a huggingface_hub / httpx2 exception, saying what to do next."""
    import httpx2
    from huggingface_hub import errors

    code = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, errors.GatedRepoError) or (isinstance(exc, errors.HfHubHTTPError) and code in (401, 403)):
        hint = ("your HF_TOKEN has no access to it (accept the license on the model page)" if has_token
                else "set HF_TOKEN in the environment of the app")
        return HubError(f"{repo_id} is gated or private (HTTP {code}): {hint}, or paste the config.json")
    if isinstance(exc, errors.RevisionNotFoundError):
        return HubError(f"{repo_id} has no revision {revision!r} (HTTP {code}): check the branch, tag or commit")
    if isinstance(exc, errors.RemoteEntryNotFoundError):
        return HubError(f"no {filename} in {repo_id} at {revision} (HTTP {code}): check the id, or paste the "
                        "config.json")
    if isinstance(exc, errors.RepositoryNotFoundError):
        return HubError(f"no repository {repo_id} on {endpoint_or_error(env)} (HTTP {code}): check the id (a "
                        "private repo needs HF_TOKEN), or paste the config.json")
    if isinstance(exc, httpx2.TooManyRedirects):
        return HubError(f"the Hub redirected {repo_id}/{filename} in a loop (HTTP 302, too many redirects); "
                        "paste the config.json")
    if isinstance(exc, errors.OfflineModeIsEnabled | httpx2.ConnectError | httpx2.TimeoutException):
        return HubError(f"cannot reach {endpoint_or_error(env)} ({exc.__class__.__name__}): you seem to be offline. "
                        "Paste or upload the config.json instead.", offline=True)
    if isinstance(exc, errors.HfHubHTTPError):
        return HubError(f"the Hub answered HTTP {code} for {repo_id}/{filename}; try again later or paste the "
                        "config.json")
    if isinstance(exc, httpx2.UnsupportedProtocol):
        return HubError(f"the Hub redirected {repo_id}/{filename} off http(s); only http(s) is followed")
    if isinstance(exc, errors.FileMetadataError | httpx2.HTTPError | OSError):
        return HubError(f"{endpoint_or_error(env)} did not answer as a Hub ({str(exc)[:200]}); check HF_ENDPOINT, "
                        "or paste the config.json", offline=isinstance(exc, httpx2.TransportError))
    return HubError(f"fetching {repo_id}/{filename} failed ({exc.__class__.__name__}); paste the config.json")


def fetch_config(repo_id: str, revision: str = "main", *, env: dict | None = None,
                 timeout: float = TIMEOUT_S, max_bytes: int = MAX_CONFIG_BYTES) -> dict:
    """The parsed config.json of ``repo_id``. Raises HubError (``offline=True`` when unreachable)."""
    env = os.environ if env is None else env
    url = config_url(repo_id, revision, env)
    repo_id = check_repo_id(repo_id)
    path = download(repo_id, "config.json", revision, env=env, timeout=timeout, max_bytes=max_bytes,
                    what="paste or upload the config.json instead")
    return load_config_text(_read_capped(path, max_bytes, repo_id, url))


def download(repo_id: str, filename: str, revision: str = "main", *, env: dict | None = None,
             timeout: float = TIMEOUT_S, max_bytes: int = MAX_CONFIG_BYTES, what: str = "") -> str:
    """The cached local path of one small file of a repo (config.json, a safetensors index), downloaded
    with ``hf_hub_download`` after a HEAD that checks its size and where it redirects. Offline: the
    cache only."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import LocalEntryNotFoundError

    env = os.environ if env is None else env
    repo_id, revision = check_repo_id(repo_id), check_revision(revision)
    ep, tok, cache = endpoint(env), token(env), cache_dir(env)
    if is_offline(env):
        try:
            return hf_hub_download(repo_id, filename, revision=revision, endpoint=ep, token=tok, cache_dir=cache,
                                   local_files_only=True)
        except (LocalEntryNotFoundError, OSError, ValueError):
            raise HubError(f"HF_HUB_OFFLINE is set, so the Hub is not contacted, and {repo_id}/{filename} is not in "
                           f"the cache ({cache}); {what or 'unset HF_HUB_OFFLINE to fetch it'}", offline=True) from None
    url = hf_hub_url(repo_id, filename, revision=revision, endpoint=ep)
    try:
        with online():
            meta = get_hf_file_metadata(url, token=tok, timeout=timeout, endpoint=ep)
            scheme = urllib.parse.urlsplit(meta.location).scheme
            if scheme not in ("http", "https"):
                raise HubError(f"the Hub redirected to a {scheme or 'relative'}: URL; only http(s) is followed")
            if meta.size is not None and meta.size > max_bytes:
                raise HubError(f"{filename} of {repo_id} is larger than {max_bytes:,} bytes; not a model config")
            return hf_hub_download(repo_id, filename, revision=revision, endpoint=ep, token=tok, cache_dir=cache,
                                   etag_timeout=timeout)
    except HubError:
        raise
    except Exception as exc:  # noqa: BLE001 - every library failure becomes a HubError saying what to do
        raise translate(exc, repo_id, revision, filename, env, bool(tok)) from None


def _read_capped(path: str, max_bytes: int, repo_id: str, url: str) -> bytes:
    with open(Path(path), "rb") as f:
        body = f.read(max_bytes + 1)
    if len(body) > max_bytes:
        raise HubError(f"config.json of {repo_id} is larger than {max_bytes:,} bytes; not a model config")
    return body
