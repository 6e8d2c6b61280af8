"""The fourth audit's additions, in Chromium at 1400 x 1000: SGLang's speculative select shows its whole label
("NEXTN / EAGLE (MTP layers)" was 178 px in a 172 px box) and every other select box of the SGLang knobs does, and
the Budget's formulas fit their column, for DeepSeek-V3 on 8 x H200 with SGLang and MTP. (The draft-model page's
summed-pages block formula was measured by hand: it first ran 981 px in a 940 px column, then was shortened.)"""

import pytest

from tests.e2e.conftest import ARTIFACTS, open_page
from tests.e2e.test_audit3_1400 import OVERFLOW, _fits
from tests.e2e.test_pages_1400 import drawn

pytestmark = pytest.mark.e2e


def test_sglang_speculative_select_and_formulas_fit(server, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    open_page(page, f"{server}/?v=1&m=deepseek-v3&tp=8&g=H200&e=sglang&spec=mtp&nspec=3",
              "What SGLang 0.5.21 logs at start-up", exact=False)
    page.get_by_text("Engine knobs").click()
    drawn(page)
    got = page.evaluate(OVERFLOW)
    box = [s for s in got["selects"] if s[0] == "NEXTN / EAGLE (MTP)"]
    assert box and box[0][1] <= box[0][2] + 1, got["selects"]
    assert _fits([s[1:] for s in got["selects"]]), got["selects"]
    assert got["katex"] and _fits(got["katex"]), got["katex"]
    page.get_by_test_id("stSidebar").screenshot(path=str(ARTIFACTS / "audit4-sglang-knobs.png"))
