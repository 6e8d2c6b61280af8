"""The Validate page's result tables are the app's HTML tables (every column on screen at 1400 px, units in
the headings, help on hover), built from a real run of a tiny llama on the CPU."""

import pytest

pytest.importorskip("torch")

import kvplan  # noqa: E402
from kvplan.validate import measure  # noqa: E402
from kvplan.web import validate_view, views  # noqa: E402

# 2 layers, 4 heads of 64 / 4 = 16, 2 KV heads, fp32 on a CPU.
TINY = dict(model_type="llama", hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=256)


@pytest.fixture(scope="module")
def result():
    return measure.run_validation(kvplan.parse_config(dict(TINY)), tokens=8, steps=3, batch=2, block_size=4)


def test_steps_rows_carry_the_hand_derived_numbers(result):
    rows = validate_view.steps_rows(result)
    assert [(r["cache"], r["step"], r["tokens"]) for r in rows] == \
        [(c, str(j), str(8 + j)) for c in ("static", "paged") for j in range(4)]
    # KV per token: 2 layers x (K + V) x 2 KV heads x 16 x 4 B (fp32) = 512 B; batch 2.
    # static, in use: prefill 8 x 2 x 512 = 8,192 B; after step 3: 11 x 2 x 512 = 11,264 B.
    assert (rows[0]["kv_predicted"], rows[0]["kv_measured"], rows[0]["equal"]) == ("8,192", "8,192", "equal")
    assert (rows[3]["kv_predicted"], rows[3]["kv_measured"]) == ("11,264", "11,264")
    assert rows[0]["blocks"] is None and rows[0]["wasted"] is None  # a static cache has no blocks
    # paged, block size 4: prefill 8 tokens = 2 blocks a sequence -> 4 blocks, 16 slots, none wasted, 8,192 B;
    # step 1: 9 tokens = 3 blocks -> 6 blocks, 24 slots (24 x 512 = 12,288 B), 24 - 2 x 9 = 6 wasted;
    # step 3: 11 tokens, still 6 blocks, 24 - 22 = 2 wasted.
    assert (rows[4]["blocks"], rows[4]["wasted"], rows[4]["kv_measured"]) == ("4 / 4", "0 / 0", "8,192")
    assert (rows[5]["blocks"], rows[5]["wasted"], rows[5]["kv_measured"]) == ("6 / 6", "6 / 6", "12,288")
    assert (rows[7]["blocks"], rows[7]["wasted"]) == ("6 / 6", "2 / 2")
    assert all(r["equal"] == "equal" for r in rows)
    assert all(float(r["allocated"]) > 0 and float(r["time"]) > 0 for r in rows)


def test_result_rows_keep_units_in_the_cells(result):
    rows = {r["quantity"]: r for r in validate_view.table_rows(result)}
    # weights: embed 256 x 64 = 16,384; a layer: q, o 64 x 64 = 4,096 each, k, v 64 x 32 = 2,048 each, gate, up,
    # down 64 x 128 = 8,192 each, two norms 64 each = 36,992; 2 layers 73,984; final norm 64; lm_head (untied)
    # 16,384: 106,816 parameters x 4 B = 427,264 B = 417.25 KiB.
    weights = rows["weight bytes"]
    assert weights["predicted"] == weights["measured"] == "427,264 B (417.25 KiB)"
    assert weights["check"] == "equal"
    assert rows["paged slots wasted"]["measured"] == "2 slots"
    assert rows["decode time per step"]["measured"].endswith(" ms")


def test_tables_are_html_with_units_and_help(result):
    for rows, columns in ((validate_view.table_rows(result), validate_view.TABLE_COLUMNS),
                          (validate_view.steps_rows(result), validate_view.STEPS_COLUMNS)):
        html = views.table_html(rows, columns)
        assert html.startswith('<div class="kv-table-wrap"><table class="kv-table">')
        assert all(c.help for c in columns)  # every heading explains itself on hover (its title attribute)
        assert html.count(' title="') == len(columns)
        assert html.count("<tr>") == len(rows) + 1
    headings = [c.heading for c in validate_view.STEPS_COLUMNS]
    assert {"KV predicted (B)", "KV measured (B)", "allocated (MiB)", "peak (MiB)", "time (ms)"} <= set(headings)
