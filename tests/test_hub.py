"""kvplan.web.hub: config.json only, from HF_ENDPOINT, with HF_TOKEN; offline and bad ids are clear errors."""

import pytest

from kvplan.web import hub
from tests.hub_server import CONFIGS, TOKEN, Handler, closed_port_endpoint, serve


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Each test its own huggingface_hub cache: nothing cached by another test answers for it."""
    monkeypatch.setattr(hub, "cache_dir", lambda env=None: str(tmp_path / "hf-cache"))


@pytest.fixture
def endpoint():
    with serve() as url:
        yield url


def test_fetches_config_from_the_configured_endpoint(endpoint):
    cfg = hub.fetch_config("acme/tiny-llama", env={"HF_ENDPOINT": endpoint})
    assert cfg == CONFIGS["acme/tiny-llama"]
    assert {r["path"] for r in Handler.seen} == {"/acme/tiny-llama/resolve/main/config.json"}
    assert [r["method"] for r in Handler.seen][-1] == "GET"
    assert all(r["authorization"] is None for r in Handler.seen)


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


# ------------------------------------------------------------------ hostile ids, revisions and redirects

@pytest.mark.parametrize("repo", [
    "../x", "a/b/../../c", "a/../b", "./a/b", "a/b/", "/a/b", "//evil.com/x", "http://evil/x", "https://evil.com/a/b",
    "evil.com:443/x", "a/b@evil.com", "a/b#x", "a/b%2F..%2Fc", "a\\b", "a/b\\..\\c", "a/b\r\nHost: evil", "a/b c",
    "a/b\x00", "Qwen/Qwen3\u20108B",  # U+2010 hyphen look-alike
    "\uff31wen/Qwen3-8B",  # fullwidth Q
    "Qw\u0435n/Qwen3-8B",  # Cyrillic e
    "Qwen\u2215Qwen3-8B",  # division slash
    "Qwen/Qwen3-8B\u200b",  # zero-width space
    "Qwen/Qwen3-8B\u202e",  # right-to-left override
    "Qwen/Qwen3\u20248B",  # one-dot leader
    "a" * 97 + "/b", "a/" + "b" * 97,
])
def test_hostile_ids_never_build_a_url(repo):
    with pytest.raises(hub.HubError, match="not a Hub model id"):
        hub.config_url(repo, env={"HF_ENDPOINT": "https://hub.example"})


@pytest.mark.parametrize("revision", ["../main", "main/../../x", "main\n", "main?x=1", "main#x", "\u2024\u2024/x",
                                      "-main", "a" * 101, ""])
def test_hostile_revisions_are_refused(revision):
    with pytest.raises(hub.HubError, match="not a revision"):
        hub.config_url("a/b", revision, env={})


def test_any_text_as_an_id_stays_on_the_endpoint():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None)
    @given(st.text(max_size=40) | st.from_regex(r"[A-Za-z0-9._/-]{1,30}", fullmatch=True),
           st.text(max_size=12) | st.just("main"))
    def check(repo, revision):
        import urllib.parse

        try:
            url = hub.config_url(repo, revision, env={"HF_ENDPOINT": "https://hub.example/mirror"})
        except hub.HubError:
            return
        parts = urllib.parse.urlsplit(url)
        assert (parts.scheme, parts.netloc) == ("https", "hub.example") and not parts.query and not parts.fragment
        assert parts.path == f"/mirror/{repo.strip()}/resolve/{urllib.parse.quote(revision, safe='')}/config.json"
        assert ".." not in parts.path.split("/") and "." not in parts.path.split("/")

    check()


@pytest.mark.parametrize("repo", ["acme/to-ftp", "acme/to-file"])
def test_redirects_are_followed_only_to_http(endpoint, repo):
    # ftp:// is refused here; urllib itself already refuses file:// (HTTP 302 'redirection not allowed')
    with pytest.raises(hub.HubError, match="only http|HTTP 302"):
        hub.fetch_config(repo, env={"HF_ENDPOINT": endpoint, "HF_TOKEN": TOKEN})


def test_redirect_loops_end_with_a_message(endpoint):
    with pytest.raises(hub.HubError, match="HTTP 302"):
        hub.fetch_config("acme/loop", env={"HF_ENDPOINT": endpoint})
    # huggingface_hub follows at most 20 same-host redirects (utils/_http.py _MAX_REDIRECTS = 20), then stops
    assert 2 <= len(Handler.seen) <= 21 and all(r["method"] == "HEAD" for r in Handler.seen)


def test_token_is_dropped_when_the_scheme_or_port_changes():
    # huggingface_hub's rule (utils/_http.py _is_same_or_hub_host), which kvplan now relies on: the token
    # follows a redirect only to the same origin (scheme, host, port) or a Hub host
    from huggingface_hub.utils._http import _is_same_or_hub_host

    url = "https://hub.example/a/b/resolve/main/config.json"
    assert _is_same_or_hub_host(url, "https://hub.example/other")
    for target in ("http://hub.example/x", "https://cdn.example/x", "https://hub.example:8443/x"):
        assert not _is_same_or_hub_host(url, target), target
