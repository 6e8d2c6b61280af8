"""Which GPUs, and how many: every catalog GPU x TP x PP that fits, ranked; the rest with reasons."""

from pydantic import BaseModel, ConfigDict

from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import GPU_CATALOG, GpuSpec
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.spec import ModelSpec

TP_CHOICES = (1, 2, 4, 8)
PP_CHOICES = (1, 2, 4)


class Option(BaseModel):
    model_config = ConfigDict(frozen=True)
    gpu: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    replicas: int  # DP replicas needed to serve the requested concurrency
    num_gpus: int
    num_nodes: int
    headroom_bytes: int  # tightest rank: KV pool minus what the requested sequences use
    max_concurrency: float  # per replica, at max_model_len
    tokens_per_s: float  # roofline bound, all replicas
    cost_per_hour: float | None
    cost_per_million_tokens: float | None


class Rejected(BaseModel):
    model_config = ConfigDict(frozen=True)
    gpu: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    reason: str


class Picker(BaseModel):
    model_config = ConfigDict(frozen=True)
    options: list[Option]
    rejected: list[Rejected]


def pick_gpus(spec: ModelSpec, max_model_len: int, concurrency: int, engine: EngineConfig = EngineConfig(),
              prices: dict[str, float] | None = None, gpus: list[GpuSpec] | None = None,
              max_replicas: int = 64) -> Picker:
    """Layouts that serve ``concurrency`` sequences of ``max_model_len`` tokens, cheapest first.

    One replica (TP x PP GPUs) holds ``max_num_seqs_at_len`` sequences; replicas = cdiv(concurrency, that).
    Ranked by cost per hour when prices (per GPU-hour) are given, else by GPU count, then throughput.
    """
    if concurrency < 1:
        raise PlanInputError("concurrency", f"must be >= 1, got {concurrency}")
    engine = engine.model_copy(update={"max_model_len": max_model_len})
    options, rejected = [], []
    for gpu in gpus or list(GPU_CATALOG.values()):
        for pp in PP_CHOICES:
            for tp in TP_CHOICES:
                if tp > gpu.gpus_per_node:
                    rejected.append(Rejected(gpu=gpu.name, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                             reason=f"TP={tp} exceeds {gpu.gpus_per_node} GPUs per node"))
                    continue
                try:
                    p = plan(spec, gpu, engine, Layout(tp, pp), suggest=False)
                except PlanInputError as exc:
                    rejected.append(Rejected(gpu=gpu.name, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                             reason=exc.message))
                    continue
                per_replica = p.max_num_seqs_at_len
                if per_replica < 1:
                    rejected.append(Rejected(gpu=gpu.name, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                             reason=p.verdict))
                    continue
                replicas = -(-concurrency // per_replica)
                if replicas > max_replicas:
                    rejected.append(Rejected(gpu=gpu.name, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                             reason=f"needs {replicas} replicas (limit {max_replicas})"))
                    continue
                n = tp * pp * replicas
                rank = min(p.ranks, key=lambda r: r.num_blocks)
                seqs = min(concurrency, per_replica)
                headroom = rank.kv_pool_bytes - seqs * p.blocks_per_request * rank.bytes_per_block
                tps = (p.decode.tokens_per_s if p.decode else 0.0) * replicas
                price = (prices or {}).get(gpu.name)
                cost = price * n if price is not None else None
                per_m = cost / (tps * 3600) * 1e6 if cost is not None and tps > 0 else None
                options.append(Option(gpu=gpu.name, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                      replicas=replicas, num_gpus=n, num_nodes=p.num_nodes * replicas,
                                      headroom_bytes=headroom, max_concurrency=p.max_concurrency, tokens_per_s=tps,
                                      cost_per_hour=cost, cost_per_million_tokens=per_m))
    options.sort(key=lambda o: (o.cost_per_hour if o.cost_per_hour is not None else float("inf"), o.num_gpus,
                                -o.tokens_per_s))
    return Picker(options=options, rejected=rejected)
