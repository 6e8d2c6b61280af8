"""kvplan's bytes "as shipped" against a checkpoint's own ``model.safetensors.index.json``.

An index's ``"metadata": {"total_size": N}`` is what ``save_pretrained`` / ``huggingface_hub`` write: the sum of
``numel x element size`` over every tensor in every shard (safetensors headers excluded), so it is the strongest
public oracle for the weights a checkpoint ships. kvplan's side is the whole checkpoint:
``weight_bytes(spec)`` (the language model in its shipped format, scales included) + ``tower_rank_bytes(spec, 1)``
(vision / audio towers) + ``mtp_rank_bytes(spec, tp=1)`` (MTP / nextn layers). The sum equals total_size to the
byte for every preset below but two; the five multimodal ones match only with their vision tower counted
(``TOWER_BYTES``: the named difference between the LM's bytes and total_size). Qwen3.5-27B's and -35B-A3B's indexes
also hold one MTP layer, which kvplan builds for MTP speculation (families/qwen3_next.mtp_fields): ``mtp_rank_bytes``
counts it, equal to its hand-derived bytes (``MTP_BYTES``).

Sources: each total_size was found by exact-string search of public GitHub files (the search index's file id in
each comment, with what the file is: an index, or a tool's sum of the checkpoint's tensor bytes, the same number);
only the integer is kept here, no file is copied. Where the file is a sibling checkpoint (MedGemma for Gemma-3,
Qwen2.5-72B for Qwen2-72B, Qwen3.6 for Qwen3.5, Mistral-7B v0.2 for v0.1) the comment says so; shapes being equal is
what the byte-exact agreement shows. Searched 2026-12-02 for
the other presets' totals (their kvplan value and 4-digit prefixes) without a hit: no public index found for them,
so no claim is made for them either way.
"""

import pytest

from kvplan import load_preset
from kvplan.parallel import Layout, mtp_rank_bytes, tower_rank_bytes
from kvplan.params import count_params
from kvplan.weights import weight_bytes

# preset -> (index total_size, source). Hand arithmetic for each in the comment above it.
TOTAL_SIZE = {
    # 8,030,261,248 params x 2 B (bf16) = 16,060,522,496. Source: a full 4-shard Llama-3.1-8B index
    # (lm_head + 291 tensors, shards model-0000{1..4}-of-00004) embedded as a string in a zml example (id 42794433997).
    "llama-3.1-8b": (16_060_522_496, "zml llama example, embedded meta-llama/Llama-3.1-8B index (id 42794433997)"),
    # 70,553,706,496 x 2 = 141,107,412,992. Source: a book transcript quoting the 30-shard Llama-3.1-70B index
    # ("lm_head.weight": "model-00030-of-00030.safetensors") (id 65976726305).
    "llama-3.1-70b": (141_107_412_992, "Llama-3.1-70B index quoted in book notes (id 65976726305)"),
    # 7,241,732,096 x 2 = 14,483,464,192. Source: a test fixture shaped on mistralai/Mistral-7B-Instruct-v0.2's index
    # (3 shards, 291 tensors = 32 layers x 9 + embed + norm + lm_head), dated 2026-09-05 (id 66497471526). v0.2 has
    # v0.1's tensors and shapes (only rope_theta / sliding_window differ in config.json), so the total is v0.1's.
    "mistral-7b-v0.1": (14_483_464_192, "fixture from mistralai/Mistral-7B-Instruct-v0.2 index (id 66497471526)"),
    # 46,702,792,704 x 2 = 93,405,585,408. Source: an expert-pruning script that writes the index it read from
    # Mixtral-8x7B-Instruct-v0.1 with that total_size (id 9876739501).
    "mixtral-8x7b": (93_405_585_408, "Mixtral-8x7B-Instruct-v0.1 total in an expert-selection script (id 9876739501)"),
    # 7,615,616,512 x 2 = 15,231,233,024. Source: notes citing Qwen/Qwen2.5-7B-Instruct's index by URL (id 71629836929);
    # the base and instruct checkpoints ship the same tensors.
    "qwen2.5-7b": (15_231_233_024, "Qwen/Qwen2.5-7B-Instruct index cited by URL (id 71629836929)"),
    # 8,190,735,360 x 2 = 16,381,470,720. Source: a Rust index-parse test on Qwen3-8B's 4-shard index (id 4560320375).
    "qwen3-8b": (16_381_470_720, "Qwen3-8B index in a Rust parse test (id 4560320375)"),
    # 14,768,307,200 x 2 = 29,536,614,400. Source: Qwen3-14B's 8-shard index printed in a write-up (id 14977551393).
    "qwen3-14b": (29_536_614_400, "Qwen3-14B index printed in a write-up (id 14977551393)"),
    # 32,762,123,264 x 2 = 65,524,246,528. Source: Qwen3-32B's 17-shard index quoted in notes on Qwen3 weight names
    # (id 36887862677); also "verbatim hub output" in a test (id 59184998850).
    "qwen3-32b": (65_524_246_528, "Qwen3-32B index quoted in notes (id 36887862677, 59184998850)"),
    # 30,532,122,624 x 2 = 61,064,245,248. Source: Qwen3-30B-A3B's 16-shard index quoted in notes (id 55662526280).
    "qwen3-30b-a3b": (61_064_245_248, "Qwen3-30B-A3B index quoted in notes (id 55662526280)"),
    # 6,738,415,616 x 2 (fp16) = 13,476,831,232. Source: a run report on a Llama-2-7B checkpoint, "291 checkpoint
    # assets 13476831232 bytes" (291 tensors = 32 layers x 9 + 3) (id 67034938095).
    "llama-2-7b": (13_476_831_232, "Llama-2-7B checkpoint tensors, 291 of them, in a run report (id 67034938095)"),
    # 3,821,079,552 x 2 = 7,642,159,104. Source: notes on Phi-3-mini-4k-instruct's model.safetensors.index.json
    # (id 54376324643); a header/index checker's output "195 names ... total size 7642159104 bytes, which is what the
    # index says" (195 = 32 layers x 6 fused tensors + 3) (id 59792086451).
    "phi-3-mini-4k-instruct": (7_642_159_104, "Phi-3-mini-4k-instruct index notes (id 54376324643, 59792086451)"),
    # 12,247,782,400 x 2 = 24,495,564,800. Source: an integrity check of Mistral-Nemo's 5-shard index, "Total tensors
    # expected: 363" (40 layers x 9 + 3) (id 56737988664).
    "mistral-nemo-base-2407": (24_495_564_800, "Mistral-Nemo 5-shard index check, 363 tensors (id 56737988664)"),
    # 72,706,203,648 x 2 = 145,412,407,296. Source: a catalog note, "official Safetensors index declares
    # metadata.total_size = 145412407296", vocab 152064, untied (id 69592811516), for Qwen/Qwen2.5-72B-Instruct
    # (id 69387729551): Qwen2.5-72B keeps Qwen2-72B's shapes (every byte agrees).
    "qwen2-72b": (145_412_407_296, "Qwen/Qwen2.5-72B-Instruct index total in notes (id 69592811516, 69387729551)"),
    # 235,093,634,560 x 2 = 470,187,269,120. Source: notes matching 36,945 names to the official Qwen3-235B-A22B index
    # and its "metadata.total_size=470187269120" (id 69874883162, 69519760087).
    "qwen3-235b-a22b": (470_187_269_120, "Qwen3-235B-A22B index total in notes (id 69874883162)"),
    # 2,779,683,840 x 2 (fp16) = 5,559,367,680 (lm_head has a bias: 51,200 x 2,560 + 51,200). Source: microsoft/phi-2's
    # 2-shard index ("lm_head.bias" first in its weight_map) printed in a tutorial (id 9232979876).
    "phi-2": (5_559_367_680, "microsoft/phi-2 index printed in a tutorial (id 9232979876)"),
    # 15,706,484,224 x 2 = 31,412,968,448. Source: a count of DeepSeek-V2-Lite from config.json, "The index file
    # reports total_size: 31412968448" (id 69506398894). V2-Lite ships no MTP layer.
    "deepseek-v2-lite": (31_412_968_448, "DeepSeek-V2-Lite index total in notes (id 69506398894)"),
    # 140,620,634,112 x 2 = 281,241,268,224. Source: a page map of Mixtral-8x22B's checkpoint, 1739 tensors (56 layers
    # x (4 attention + router + 8 x 3 experts + 2 norms) + 3), "mapped_tensor_payload_bytes": "281241268224" beside
    # 225,120 header bytes (id 56218868576).
    "mixtral-8x22b": (281_241_268_224, "Mixtral-8x22B checkpoint page map, 1739 tensors (id 56218868576)"),
    # gpt-oss-20b, MXFP4 experts + bf16 rest (a dump of openai/gpt-oss-20b's config.json and full index, shards
    # model-0000{0,1}-of-00002, id 31112482743):
    #   one expert: gate_up_proj_blocks u8 [5760, 1440] 8,294,400 + _scales u8 [5760, 90] 518,400
    #               + down_proj_blocks u8 [2880, 1440] 4,147,200 + _scales [2880, 90] 259,200 = 13,219,200
    #               + biases bf16 (5760 + 2880) x 2 = 17,280 -> 13,236,480; x 32 experts x 24 layers = 10,165,616,640
    #   embed_tokens + lm_head 2 x 201,088 x 2,880 x 2 = 2,316,533,760; attention a layer: q [4096, 2880] + o
    #   [2880, 4096] 2 x 11,796,480, k / v [512, 2880] 2 x 1,474,560, biases 4,096 + 512 + 512 + 2,880, sinks 64
    #   = 26,550,144, x 24 layers x 2 B = 1,274,406,912; router (weight + bias) 24 x 32 x 2,881 x 2 = 4,425,216;
    #   norms (49 x 2,880) x 2 = 282,240
    #   total 10,165,616,640 + 2,316,533,760 + 1,274,406,912 + 4,425,216 + 282,240 = 13,761,264,768
    "gpt-oss-20b": (13_761_264_768, "openai/gpt-oss-20b config + index dump (id 31112482743)"),
    # gpt-oss-120b: as gpt-oss-20b with 36 layers and 128 experts: experts 36 x 128 x 13,236,480 = 60,993,699,840
    #   + embed/lm_head 2,316,533,760 + attention 36 x 26,550,144 x 2 = 1,911,610,368 + router 36 x 128 x 2,881 x 2
    #   = 26,551,296 + norms (73 x 2,880) x 2 = 420,480 = 65,248,815,744. Source: a test over openai/gpt-oss-120b's
    #   safetensors inventory, "tensor_bytes" 65248815744 (file bytes 65,248,893,184 with headers) (id 59724567210).
    "gpt-oss-120b": (65_248_815_744, "openai/gpt-oss-120b safetensors inventory tensor_bytes (id 59724567210)"),
    # With a vision tower (LM params + tower params) x 2 B:
    # (27,009,346,304 + 423,060,336 SigLIP tower + projector) x 2 = 54,864,813,280. Source: Hub metadata of
    # google/medgemma-27b-it (sha 2d3e00ea, "metadata.total_size 54864813280", 12 shards) in a lab notebook
    # (id 54876698882): MedGemma-27B-it is Gemma-3-27B-it's architecture, every shape equal.
    "gemma-3-27b-it": (54_864_813_280, "google/medgemma-27b-it index total (Gemma-3-27B-it shapes) (id 54876698882)"),
    # (7,615,616,512 + 676,550,144 ViT + merger) x 2 = 16,584,333,312. Source: a training script asserting a merged
    # Qwen2.5-VL-7B checkpoint's index total_size == 16584333312 (id 60884583135, 61082468558); Qwen/Qwen-Image's text
    # encoder (Qwen2.5-VL-7B-Instruct) priced with the same number (id 8559747720).
    "qwen2.5-vl-7b-instruct": (16_584_333_312, "Qwen2.5-VL-7B index total asserted in scripts (id 60884583135)"),
    # (8,190,735,360 + 576,388,336) x 2 = 17,534,247,392. Source: notes on Qwen3-VL-8B-Instruct fetched from the Hub
    # ("BF16 权重索引 total_size=17534247392", the vision tower called out) (id 70717024019); also a test's
    # mllm/model.safetensors.index.json (id 56940673981).
    "qwen3-vl-8b-instruct": (17_534_247_392, "Qwen3-VL-8B-Instruct index total in notes (id 70717024019)"),
    # (26,895,998,464 LM + 460,730,096 tower + 424,699,392 MTP) x 2 = 55,562,855,904. Source: Qwen3.5/3.6-27B BF16
    # checkpoints' index: "total_size": 55562855904.0 with model.language_model.* names (a tool-output dump, id
    # 54362030165); the same total with "n_tensors 1199 ... n_language_mtp_parameters 27320697856, n_vision_parameters
    # 460730096, n_language_mtp_tensors 866, n_vision_tensors 333" (id 68305723776) and for Qwen/Qwen3.6-27B (15
    # shards, id 56148059805). The MTP layer is MTP_BYTES', which kvplan builds.
    # (34,660,610,688 LM + 446,571,248 tower + 844,640,768 MTP) x 2 = 71,903,645,408. Source: Qwen/Qwen3.6-35B-A3B's
    # index, "total_size": 71903645408.0, 26 shards (a download smoke log, id 52861813616; "Receipt: Qwen3.6-35B-A3B
    # ships" it, id 68855521962; "auxiliary_checkpoint_bytes 2582424032" = tower + MTP beside
    # "base_text_checkpoint_bytes 69321221376" = kvplan's LM, id 69395936378). Qwen3.6-35B-A3B keeps
    # Qwen3.5-35B-A3B's shapes (every byte agrees).
    "qwen3.5-35b-a3b": (71_903_645_408, "Qwen/Qwen3.6-35B-A3B index, 26 shards (id 52861813616, 69395936378)"),
    "qwen3.5-27b": (55_562_855_904, "Qwen3.5/3.6-27B index, 1199 tensors, 15 mtp.* (id 54362030165)"),
}

# The MTP layers, outside the LM's bytes. Qwen3.5-27B ships one MTP layer (config mtp_num_hidden_layers 1; the
# index's 15 mtp.* tensors: 1199 - 1184 in an MTP-less derivative's index, id 61368360812, whose total_size is
# 54,713,457,120 = kvplan's LM + tower exactly). kvplan's qwen3_5 family builds it (spec.mtp_layers / mtp_other,
# loaded for MTP speculation, tests/test_qwen35_mtp.py). The layer, in bf16, from the preset's shapes:
#   mtp.layers.0 (a full-attention decoder layer): q_proj [12288, 5120] 62,914,560 + k_proj, v_proj [1024, 5120]
#   2 x 5,242,880 + o_proj [5120, 6144] 31,457,280 + q_norm, k_norm 2 x 256 + gate/up/down 3 x 89,128,960
#   + 2 layer norms 2 x 5,120 = 372,255,232
#   mtp.fc [5120, 10240] 52,428,800 + mtp.pre_fc_norm_embedding, mtp.pre_fc_norm_hidden, mtp.norm 3 x 5,120
#   = 52,444,160;  together 424,699,392 params x 2 B = 849,398,784
# (= 27,320,697,856 LM + MTP params - 26,895,998,464 kvplan's LM, the id 68305723776 count).
# Qwen3.5-35B-A3B's MTP layer is one of its full-attention MoE layers: attention 16,777,216 + 2 x 1,048,576
#   + 8,388,608 + 2 x 256 = 27,263,488; shared expert 3 x 1,048,576 + gate 2,048 = 3,147,776; router [256, 2048]
#   524,288; 2 norms 4,096; 256 experts x 3 x [512, 2048] = 805,306,368 -> 836,246,016; + fc [2048, 4096] 8,388,608
#   + 3 norms 6,144 = 844,640,768 params x 2 B = 1,689,281,536 (id 69395936378's auxiliary 2,582,424,032 B
#   = 893,142,496 tower + 1,689,281,536).
MTP_BYTES = {"qwen3.5-27b": 849_398_784, "qwen3.5-35b-a3b": 1_689_281_536}

# The named difference: a multimodal checkpoint's total_size = the language model's bytes + its towers' (bf16).
TOWER_BYTES = {
    "gemma-3-27b-it": 423_060_336 * 2,          # 846,120,672
    "qwen2.5-vl-7b-instruct": 676_550_144 * 2,  # 1,353,100,288
    "qwen3-vl-8b-instruct": 576_388_336 * 2,    # 1,152,776,672
    "qwen3.5-27b": 460_730_096 * 2,             # 921,460,192
    "qwen3.5-35b-a3b": 446_571_248 * 2,         # 893,142,496
}


def checkpoint_total_bytes(name: str) -> int:
    """kvplan's bytes for the whole checkpoint: LM as shipped + towers + MTP layers."""
    spec = load_preset(name)
    return weight_bytes(spec).total_bytes + tower_rank_bytes(spec, 1) + mtp_rank_bytes(spec, Layout(tp=1))


@pytest.mark.parametrize("name", sorted(TOTAL_SIZE))
def test_checkpoint_bytes_equal_index_total_size(name):
    total_size, _source = TOTAL_SIZE[name]
    spec = load_preset(name)
    assert mtp_rank_bytes(spec, Layout(tp=1)) == MTP_BYTES.get(name, 0)  # the two Qwen3.5 MTP layers, else none
    assert tower_rank_bytes(spec, 1) == TOWER_BYTES.get(name, 0)
    assert weight_bytes(spec).total_bytes + TOWER_BYTES.get(name, 0) + MTP_BYTES.get(name, 0) == total_size
    assert checkpoint_total_bytes(name) == total_size


@pytest.mark.parametrize("name", sorted(n for n in TOTAL_SIZE if not n.startswith("gpt-oss")))
def test_unquantized_total_size_is_two_bytes_a_parameter(name):
    # A 16-bit checkpoint (tied embeddings stored once): total_size = 2 x (LM + tower parameters), the comments'
    # arithmetic; a mismatch here would point at the parameter count, not at the format.
    p = count_params(load_preset(name))
    assert TOTAL_SIZE[name][0] == 2 * (p.total_params + p.tower_params + p.mtp_params)


@pytest.mark.parametrize(("name", "hidden", "layer_numel"), [("qwen3.5-27b", 5_120, 372_255_232),
                                                          ("qwen3.5-35b-a3b", 2_048, 836_246_016)])
def test_qwen3_5_mtp_layer_is_the_difference(name, hidden, layer_numel):
    # The hand counts above from the preset's own shapes: the MTP layer is one of its full-attention layers
    # + fc [hidden, 2 hidden] + 3 norms [hidden].
    spec = load_preset(name)
    full = next(layer for layer in spec.layers if any(c.name == "q_proj" for c in layer.attention))
    numel = sum(c.numel for c in (*full.attention, *full.mlp, *full.router, *full.norms, *full.other))
    assert numel + (full.experts.numel if full.experts else 0) == layer_numel
    assert (layer_numel + hidden * 2 * hidden + 3 * hidden) * 2 == MTP_BYTES[name]
    assert count_params(spec).mtp_params * 2 == MTP_BYTES[name] == mtp_rank_bytes(spec, Layout(tp=1))


def test_gpt_oss_20b_breakdown():
    # The hand-derived split in the comment above, category by category.
    c = weight_bytes(load_preset("gpt-oss-20b")).components
    assert c["experts"] == 24 * 32 * (8_294_400 + 518_400 + 4_147_200 + 259_200 + (5_760 + 2_880) * 2) == 10_165_616_640
    assert c["embeddings"] + c["lm_head"] == 2 * 201_088 * 2_880 * 2 == 2_316_533_760
    assert c["router"] == 24 * 32 * (2_880 + 1) * 2 == 4_425_216
    assert c["norms"] == 49 * 2_880 * 2 == 282_240
    assert c["attention"] == 24 * (2 * 11_796_480 + 2 * 1_474_560 + 8_000 + 64) * 2 == 1_274_406_912
    big = weight_bytes(load_preset("gpt-oss-120b")).components
    assert big["experts"] == 36 * 128 * 13_236_480 == 60_993_699_840
    assert big["attention"] == 36 * 26_550_144 * 2 == 1_911_610_368
    assert big["router"] == 36 * 128 * 2_881 * 2 == 26_551_296 and big["norms"] == 73 * 2_880 * 2 == 420_480
