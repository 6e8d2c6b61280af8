"""The Validate page under concurrency: two runs at once -> one runs, the other is told "busy"; the
first completes; nothing it built outlives it; the page shows "busy" to everyone else meanwhile."""

import gc
import threading
import weakref
from pathlib import Path

import pytest

pytest.importorskip("torch")
from streamlit.testing.v1 import AppTest  # noqa: E402

import kvplan  # noqa: E402
from kvplan.validate import measure  # noqa: E402
from kvplan.validate.measure import BusyError, busy, run_validation  # noqa: E402

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "validate.py")
TINY = dict(model_type="llama", hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=256, max_position_embeddings=512)


class _Built(weakref.WeakSet):
    made: int = 0  # how many were built (the set holds the live ones)


def record_decoders(monkeypatch) -> _Built:
    """A weak set that every Decoder built from now on (any thread, the page's runs too) joins."""
    from kvplan.validate.decoder import Decoder

    built = _Built()
    init = Decoder.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        built.add(self)
        built.made += 1

    monkeypatch.setattr(Decoder, "__init__", recording)
    return built


def live_decoders(built: _Built, name: str) -> int:
    """How many of the recorded Decoders for ``name`` are alive after a full collection. Reference counting frees
    them, so the collection (seconds on the whole suite's heap, as a gc.get_objects() scan was) runs only when one
    is still there."""
    def live() -> int:
        return sum(1 for d in list(built) if d.spec.name == name)

    if live():
        gc.collect()
    return live()


@pytest.fixture
def decoders(monkeypatch) -> _Built:
    return record_decoders(monkeypatch)


def test_two_runs_at_once_one_runs_one_is_busy_and_memory_is_released(decoders):
    spec = kvplan.parse_config(TINY, name="concurrent-probe")
    barrier = threading.Barrier(2)
    other_done = threading.Event()
    outcomes: dict[str, object] = {}

    def worker(tag: str) -> None:
        def hold(fraction, text):  # the run that got the lock waits until the other has been refused
            other_done.wait(30)

        barrier.wait(10)
        try:
            outcomes[tag] = run_validation(spec, tokens=8, steps=2, batch=2, block_size=4, progress=hold)
        except BusyError as exc:
            outcomes[tag] = exc
            other_done.set()

    threads = [threading.Thread(target=worker, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    ran = [o for o in outcomes.values() if isinstance(o, dict)]
    refused = [o for o in outcomes.values() if isinstance(o, BusyError)]
    assert len(ran) == 1 and len(refused) == 1, outcomes
    assert ran[0]["ok"] and "busy" in refused[0].message and refused[0].field == "validate"
    assert decoders.made == 1  # the run that went ahead built its model (the refused one built none)
    assert not busy() and live_decoders(decoders, "concurrent-probe") == 0  # the lock and the model are released
    assert run_validation(spec, tokens=8, steps=1, check=False)["ok"]  # and the next run goes ahead
    assert live_decoders(decoders, "concurrent-probe") == 0


def test_many_callers_while_one_runs_all_see_busy(decoders):
    spec = kvplan.parse_config(TINY, name="busy-probe")
    started, release = threading.Event(), threading.Event()
    result = {}

    def hold(fraction, text):
        started.set()
        release.wait(30)

    t = threading.Thread(target=lambda: result.setdefault("r", run_validation(spec, tokens=8, steps=2, progress=hold)))
    t.start()
    assert started.wait(30)
    errors = []

    def caller():
        try:
            run_validation(spec, tokens=8, steps=2)
        except BusyError as exc:
            errors.append(exc)

    callers = [threading.Thread(target=caller) for _ in range(8)]
    try:
        for c in callers:
            c.start()
        for c in callers:
            c.join(30)
        assert len(errors) == 8
        at = AppTest.from_file(PAGE, default_timeout=30)
        at.query_params["m"] = "gpt2"
        at.run()
        assert not at.exception and any("busy" in i.value for i in at.info)  # shown on load, before a click
        at.button[0].click().run()
        assert any("busy" in w.value for w in at.warning) and not at.dataframe
    finally:
        release.set()
        t.join(60)
    assert result["r"]["ok"] and not busy() and live_decoders(decoders, "busy-probe") == 0


def test_a_failing_run_releases_the_lock_for_the_next(monkeypatch, decoders):
    spec = kvplan.parse_config(TINY, name="fail-probe")

    def boom(fraction, text):
        raise RuntimeError("a bug in the middle of a run")

    with pytest.raises(RuntimeError):
        run_validation(spec, tokens=8, steps=2, progress=boom)
    assert not busy() and not measure._LOCK.locked() and live_decoders(decoders, "fail-probe") == 0
    assert run_validation(spec, tokens=8, steps=1, check=False)["ok"]
