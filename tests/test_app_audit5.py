"""The fifth UI audit's findings (qa, 2026-12-02), each fixed and asserted with the plan's own numbers.

* Budget's "Bytes per block" formula for DeepSeek-V4-Flash on 8 x B200 (vLLM 0.33) read
  "62 x 1,002,240 B = 1,002,240 B": a product that is false. vLLM's packed DSV4 pool (kvplan.vllm_dsv4.dsv4_layout)
  gives each of its five groups a page that is already the sum over the group's layers, and a block is the largest
  group page (0.27+): the MLA group's 1,002,240 B (its 62 layers). 152,483,850,850 B of pool // 1,002,240 = 152,143.
"""

from kvplan.web.cached import plan_for
from kvplan.web.formulas import budget_formulas
from kvplan.web.state import PlanState


def test_the_bytes_per_block_formula_of_a_packed_dsv4_pool_is_not_a_false_product():
    p = plan_for(PlanState(model="deepseek-v4-flash", gpu="B200", tensor_parallel_size=8))
    assert len(p.kv_groups) == 5 and p.kv_groups[0].layers == 62 and p.num_blocks == 152_143
    formulas = dict(budget_formulas(p))
    title = next(k for k in formulas if k.startswith("Bytes per block"))
    text = formulas[title]
    assert r"62 \times" not in text  # 62 x 1,002,240 is 62,138,880, not one block
    assert title == "Bytes per block (5 groups, each page the sum over its layers)"
    assert text.endswith(r"\max_{\text{groups}} \sum_{\text{layers}} \text{page} = 1{,}002{,}240\,\text{B}")
    assert max(g.page_bytes for g in p.kv_groups) == 1_002_240
    # one uniform group keeps the product: gpt-oss-120b's 18-layer groups of 32,768 B pages
    oss = dict(budget_formulas(plan_for(PlanState(model="gpt-oss-120b"))))
    assert oss["Bytes per block"].endswith(r"= 18 \times 32{,}768\,\text{B} = 589{,}824\,\text{B}")
