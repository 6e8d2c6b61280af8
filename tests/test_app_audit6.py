"""The sixth UI audit's findings (qa2, 2026-12-02), each fixed and asserted with the plan's own numbers.

* Import's preview said "the sidebar and every other page still plan Llama-3.1-8B on H100-SXM" while the sidebar's
  own plan was refused (-tp 3: 32 heads do not split over 3 ranks): it now says the sidebar plans nothing and why.
"""

from tests.app_util import plain, run_app

IMPORT = "pages/import.py"


def test_import_preview_does_not_say_the_sidebar_plans_a_refused_plan():
    at = run_app({"v": "1", "m": "llama-3.1-8b", "tp": "3"}, IMPORT)
    at.text_area(key="w.command").set_value("vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4").run()
    at.selectbox(key="w.import_gpu").select("H100-SXM").run()
    notes = [plain(i.value) for i in at.info if "Preview, not applied" in plain(i.value)]
    assert len(notes) == 1, [plain(i.value) for i in at.info]
    assert "still plan" not in notes[0]
    assert "are refused (**tensor_parallel_size**)" in notes[0] and "plan nothing now" in notes[0]
    # a sidebar that plans keeps the plain note
    ok = run_app({"v": "1", "m": "llama-3.1-8b"}, IMPORT)
    ok.text_area(key="w.command").set_value("vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4").run()
    ok.selectbox(key="w.import_gpu").select("H100-SXM").run()
    assert any("every other page still plan llama-3.1-8b on H100-SXM" in plain(i.value)
               for i in ok.info), [plain(i.value) for i in ok.info]
