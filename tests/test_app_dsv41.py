"""The GPUs page for DeepSeek-V4.1, which has no decode ceiling (kvplan.plan.V41_NO_DECODE): its layouts are ranked,
but no tokens/s figure is shown as if measured (the column was 0 for every layout) and no chart is drawn on a
tokens/s axis that every point would sit off (a log axis has no 0)."""

import json

import pytest

from kvplan.web.state import encode_config
from tests.app_util import figure, plain, run_app
from tests.test_dsv4_1 import RELEASE_QC, _v41

# V4.1 plans on SM 10.x and SM 9.0 (kvplan.vllm_dsv41): every such catalog GPU, the H200 NVL (SM 9.0) since the
# catalog took it on 2026-12-03
SERVING = {"B200", "B300", "GB200", "GB300", "H100-SXM", "H100-PCIe", "H100-NVL", "H200", "H200-NVL", "H20"}


@pytest.fixture(scope="module")
def gpus_page():
    # the release-format V4.1-Flash (fp8 32 x 32 blocks, MXFP4 experts), 32,768 tokens, one sequence: planned on the
    # SM 10.x GPUs (FlashInfer TRTLLM) and Hopper (Humming) only
    link = {"v": "1", "cfg": encode_config(_v41(RELEASE_QC)), "len": "32768", "g": "B200"}
    return run_app(link, "pages/gpus.py")


def test_v41_layouts_rank_with_an_empty_tokens_column_and_no_chart(gpus_page):
    at = gpus_page
    assert not at.exception
    table = at.dataframe[0].value
    assert len(table) > 0 and set(table["GPU"]) <= SERVING, set(table["GPU"])
    assert table["tokens/s bound"].isna().all() and table["$ / M tokens"].isna().all()
    with pytest.raises(KeyError):
        figure(at, "gpus.chart")
    said = plain(" ".join(c.value for c in at.caption))
    assert "No decode ceiling for DeepSeek-V4.1" in said and "The tokens/s and $ / M tokens columns are empty." in said
    assert "No chart: it plots each layout's tokens/s bound, and this model has none (above)." in said
    column = json.loads(at.dataframe[0].proto.columns)
    assert "tokens/s bound" in column


def test_a_gpu_refusal_on_the_sidebar_does_not_hide_the_gpus_that_serve_it():
    # an A100 on the sidebar: vLLM's V4.1 MoE backends there are not read, so the plan is refused for that GPU ("gpu"
    # field), but the picker still ranks the layouts of the GPUs that serve it
    link = {"v": "1", "cfg": encode_config(_v41(RELEASE_QC)), "len": "32768", "g": "A100-80GB"}
    at = run_app(link, "pages/gpus.py")
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert len(table) > 0 and set(table["GPU"]) <= SERVING and "A100-80GB" not in set(table["GPU"]), set(table["GPU"])
    said = plain(" ".join(c.value for c in at.caption))
    assert "Serving 1 sequence of 32,768 tokens" in said, said
