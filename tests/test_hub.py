"""kvplan.web.hub: config.json only, from HF_ENDPOINT, with HF_TOKEN; offline and bad ids are clear errors."""

import pytest

from kvplan.web import hub
from tests.hub_server import CONFIGS, TOKEN, Handler, closed_port_endpoint, serve


@pytest.fixture
def endpoint():
    with serve() as url:
        yield url


def test_fetches_config_from_the_configured_endpoint(endpoint):
    cfg = hub.fetch_config("acme/tiny-llama", env={"HF_ENDPOINT": endpoint})
    assert cfg == CONFIGS["acme/tiny-llama"]
    assert Handler.seen[-1]["path"] == "/acme/tiny-llama/resolve/main/config.json"
    assert Handler.seen[-1]["authorization"] is None


def test_gated_repo_needs_the_token(endpoint):
    with pytest.raises(hub.HubError, match="gated or private.*HF_TOKEN"):
        hub.fetch_config("acme/gated", env={"HF_ENDPOINT": endpoint})
    cfg = hub.fetch_config("acme/gated", env={"HF_ENDPOINT": endpoint, "HF_TOKEN": TOKEN})
    assert cfg["_name_or_path"] == "acme/gated"


def test_token_is_not_sent_to_another_host_after_a_redirect(endpoint):
    cfg = hub.fetch_config("acme/moved", env={"HF_ENDPOINT": endpoint, "HF_TOKEN": TOKEN})
    assert cfg == CONFIGS["acme/tiny-llama"]
    first, second = Handler.seen[-2:]
    assert first["authorization"] == f"Bearer {TOKEN}"
    assert second["host"].startswith("localhost:") and second["authorization"] is None


def test_missing_repo_and_oversized_answer(endpoint):
    with pytest.raises(hub.HubError, match="HTTP 404"):
        hub.fetch_config("acme/nothing", env={"HF_ENDPOINT": endpoint})
    with pytest.raises(hub.HubError, match="larger than"):
        hub.fetch_config("acme/huge", env={"HF_ENDPOINT": endpoint})


def test_unreachable_endpoint_says_offline():
    with pytest.raises(hub.HubError, match="offline") as info:
        hub.fetch_config("acme/tiny-llama", env={"HF_ENDPOINT": closed_port_endpoint()}, timeout=2)
    assert info.value.offline


def test_hf_hub_offline_sends_nothing(endpoint):
    with pytest.raises(hub.HubError, match="HF_HUB_OFFLINE") as info:
        hub.fetch_config("acme/tiny-llama", env={"HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": "1"})
    assert info.value.offline and Handler.seen == []


@pytest.mark.parametrize("repo", ["", "noslash", "a/b/c", "../etc/passwd", "a/..", "org/na me", "org/x?y=1",
                                  "-org/x", "org/x--y", "http://evil/x"])
def test_repo_ids_are_checked_before_any_request(repo):
    with pytest.raises(hub.HubError, match="not a Hub model id"):
        hub.config_url(repo, env={})


def test_endpoint_default_and_validation():
    assert hub.config_url("Qwen/Qwen3-8B", env={}) == "https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json"
    mirror = hub.config_url("a/b", env={"HF_ENDPOINT": "https://mirror.example/"})
    assert mirror == "https://mirror.example/a/b/resolve/main/config.json"
    with pytest.raises(hub.HubError, match="HF_ENDPOINT"):
        hub.endpoint({"HF_ENDPOINT": "file:///etc"})
