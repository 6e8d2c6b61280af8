"""Safetensors headers in the app: the core reader (``kvplan.checkpoint``, re-exported here) plus what needs the
app's stack or its operator's settings:

- ``read_hub``: a Hub checkpoint, the index through ``hf_hub_download`` and each shard's header through
  huggingface_hub's ``HfApi.parse_safetensors_file_metadata`` (a range request of the first 100 kB, a second one
  if the header is longer), with kvplan.web.hub's endpoint / token / cache / offline settings; huggingface_hub
  is imported per call;
- ``local_folder``: a local folder the app may read, only under the root the operator names in
  ``KVPLAN_CHECKPOINT_ROOT`` (resolved: a path that leaves it by ``..`` or a symlink is refused; with the
  variable unset, no local path at all). ``KVPLAN_LOCAL_MODELS``, the Validate page's older name, is read when
  ``KVPLAN_CHECKPOINT_ROOT`` is unset: one root serves both pages (``checkpoint_root``).
"""

import concurrent.futures
import json
import os
from pathlib import Path

from kvplan.checkpoint import (  # noqa: F401 - re-exported: pages and tests import them from here
    AUDIO, COLUMN, DTYPE_BITS, INDEX_FILE, LAYER, MAX_HEADER_BYTES, MAX_INDEX_BYTES, MAX_SHARDS, MTP, ROW, SCALE,
    SINGLE_FILE, TRANSPOSED, VISION, VOCAB, Checkpoint, CheckpointError, RankWeights, TensorInfo,
    busiest_rank, categorize, compare_rows, engine_with_checkpoint_weights, layer_index, load_options, parse_header,
    rank_bytes, read_local, read_local_header, shape_mismatches, shards_from_index,
    source_text)
from kvplan.units import counted
from kvplan.web import hub
from kvplan.web.state import MAX_LOCAL_PATH  # characters of a local path the app takes (the link key 'ckd' too)

HUB_THREADS = 8
ROOT_ENV = "KVPLAN_CHECKPOINT_ROOT"
LEGACY_ROOT_ENV = "KVPLAN_LOCAL_MODELS"  # the Validate page's name for the same root, read when ROOT_ENV is unset
ROOT_ENVS = (ROOT_ENV, LEGACY_ROOT_ENV)


def root_variable(env: dict | None = None) -> str:
    """The variable the root is read from: KVPLAN_CHECKPOINT_ROOT when set (non-blank), else KVPLAN_LOCAL_MODELS when
    set, else KVPLAN_CHECKPOINT_ROOT (the name the refusals give)."""
    env = os.environ if env is None else env
    return next((name for name in ROOT_ENVS if (env.get(name) or "").strip()), ROOT_ENV)


def checkpoint_root(env: dict | None = None) -> Path | None:
    """The operator's root for local checkpoints, resolved, or None when unset: KVPLAN_CHECKPOINT_ROOT first, else the
    older KVPLAN_LOCAL_MODELS (``root_variable``). The Model page's local folders and the Validate page's local
    checkpoints are both read under it."""
    env = os.environ if env is None else env
    text = (env.get(root_variable(env)) or "").strip()
    return Path(os.path.expanduser(text)).resolve() if text else None


def local_folder(text: str, env: dict | None = None) -> Path:
    """The folder ``text`` names (relative to the root, or absolute), resolved, if it lies under KVPLAN_CHECKPOINT_ROOT;
    CheckpointError otherwise, saying why. Checked on every call: the root may have changed since a link was made."""
    root, name = checkpoint_root(env), root_variable(env)
    text = str(text).strip()
    if root is None:
        raise CheckpointError(f"{ROOT_ENV} is not set on this server (nor the older {LEGACY_ROOT_ENV}), so the app "
                              "reads no local folder; give a Hub id, or run `python -m kvplan plan MODEL --checkpoint "
                              "FOLDER`")
    if not root.is_dir():
        raise CheckpointError(f"{name}={root} is not a folder on this server")
    if not text or len(text) > MAX_LOCAL_PATH or "\x00" in text:
        raise CheckpointError(f"give a folder under {root} (at most {MAX_LOCAL_PATH:,} characters)")
    try:
        path = (root / text).resolve()  # an absolute text replaces the root; '..' and links resolved
        inside = path.is_relative_to(root)
        found = inside and path.is_dir()
    except (OSError, RuntimeError, ValueError) as exc:  # a name too long, a symlink loop (RuntimeError in 3.11)
        raise CheckpointError(f"{text[:200]!r} cannot be resolved under {root} ({type(exc).__name__})") from None
    if not inside:
        raise CheckpointError(f"{text[:200]!r} is not under {name} ({root}); the app reads local folders "
                              "only under it")
    if not found:
        raise CheckpointError(f"no folder {text[:200]!r} under {root}")
    return path


def read_under_root(text: str, env: dict | None = None) -> Checkpoint:
    """``read_local`` of ``local_folder(text)``, every file read kept under the root (a shard linked out of it is
    refused, not read). ``source``: the resolved folder."""
    folder = local_folder(text, env)
    return read_local(folder, within=checkpoint_root(env))


def local_config_bytes(text: str, env: dict | None = None) -> bytes:
    """The config.json of the folder ``text`` names under the root (``local_folder``), at most MAX_CONFIG_BYTES + 1
    bytes read (so an oversized one is refused by the config reader, not loaded); a link out of the root is refused."""
    from kvplan.hf_config import MAX_CONFIG_BYTES

    folder = local_folder(text, env)
    path = folder / "config.json"
    try:
        if not path.is_file():
            raise CheckpointError(f"no config.json in {folder}")
        if not path.resolve().is_relative_to(checkpoint_root(env)):
            raise CheckpointError(f"{folder.name}/config.json is a link out of {checkpoint_root(env)}; kvplan reads no "
                                  "file outside it")
        with open(path, "rb") as f:
            return f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise CheckpointError(f"{folder.name}/config.json cannot be read ({exc.strerror or exc})") from None


def _local_hint(exc: Exception) -> str:
    """A config fetch's advice (paste the config.json) turned into a checkpoint read's (read a local copy)."""
    return str(exc).replace("paste the config.json", "read a local copy").replace(
        "Paste or upload the config.json instead", "Read a local copy instead")


def read_hub(repo_id: str, revision: str = "main", *, env: dict | None = None,
             timeout: float = hub.TIMEOUT_S) -> Checkpoint:
    """Every tensor of a Hub checkpoint from its headers (range requests). Raises hub.HubError."""
    from huggingface_hub import HfApi

    env = os.environ if env is None else env
    repo_id, revision = hub.check_repo_id(repo_id), hub.check_revision(revision)
    try:
        path = hub.download(repo_id, INDEX_FILE, revision, env=env, timeout=timeout, max_bytes=MAX_INDEX_BYTES,
                            what="read the headers of a local copy instead")
        with open(path, "rb") as f:
            names = shards_from_index(json.loads(f.read()), repo_id)
    except hub.HubError as exc:
        if "no model.safetensors.index.json" not in str(exc):
            raise hub.HubError(_local_hint(exc), exc.offline) from None
        names = [SINGLE_FILE]
    except (UnicodeDecodeError, json.JSONDecodeError, CheckpointError) as exc:
        raise hub.HubError(f"{repo_id}: {INDEX_FILE} cannot be read ({exc})") from None
    if hub.is_offline(env):
        raise hub.HubError("HF_HUB_OFFLINE is set: safetensors headers are read from the Hub by range requests, "
                           "which offline mode forbids; read a local copy instead", offline=True)
    api = HfApi(endpoint=hub.endpoint(env), token=hub.token(env))
    tok = hub.token(env)

    def one(name: str):
        meta = api.parse_safetensors_file_metadata(repo_id, name, revision=revision, token=tok, timeout=timeout)
        return [TensorInfo(t, info.dtype, tuple(info.shape), name) for t, info in meta.tensors.items()]

    try:
        with hub.online(), concurrent.futures.ThreadPoolExecutor(min(HUB_THREADS, len(names))) as pool:
            parts = list(pool.map(one, names))
    except Exception as exc:  # noqa: BLE001 - every library failure becomes a HubError saying what to do
        error = hub.translate(exc, repo_id, revision, "safetensors headers", env, bool(tok))
        raise hub.HubError(_local_hint(error), error.offline) from None
    tensors = [t for part in parts for t in part]
    for t in tensors:
        if t.dtype not in DTYPE_BITS:
            raise hub.HubError(f"{repo_id}: tensor {t.name[:120]!r} has dtype {t.dtype[:20]!r}, unknown to kvplan")
    return Checkpoint(repo_id, tensors, len(names), [f"{counted(len(names), 'safetensors file')}, headers by range requests"])
