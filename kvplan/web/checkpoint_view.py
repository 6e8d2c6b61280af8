"""The "read safetensors headers" result on a page: bytes per dtype, and checkpoint vs kvplan per category."""

import streamlit as st

from kvplan.errors import ConfigError, PlanInputError
from kvplan.web import figures, views
from kvplan.web.checkpoint import Checkpoint, CheckpointError, compare_rows
from kvplan.web.hub import HubError

DTYPE_COLUMNS = [views.Col("dtype", "dtype", "The safetensors dtype of the tensors."),
                 views.Col("tensors", "tensors"), views.Col("elements", "elements"),
                 views.Col("bytes", "bytes", "numel x the dtype's size (F4: half a byte), exact.")]
COMPARE_COLUMNS = [views.Col("category", "category"),
                   views.Col("checkpoint_bytes", "checkpoint (B)", "From the safetensors headers."),
                   views.Col("kvplan_bytes", "kvplan (B)", "kvplan's computed bytes for the format, by category."),
                   views.Col("difference", "difference (B)"), views.Col("note", "why")]


def show(read, spec, weight_format: str | None = None) -> Checkpoint | None:
    """Run ``read()`` (a Checkpoint) and show its tables, or the error saying what to do. ``spec``: the
    model to compare with, or a callable building it (a local folder's config.json). Returns the checkpoint
    (None when it cannot be read)."""
    try:
        ckpt: Checkpoint = read()
        spec = spec() if callable(spec) else spec
    except (HubError, CheckpointError, ConfigError, PlanInputError, OSError) as exc:
        st.warning(f"Safetensors headers: {views.esc(exc)}")
        return None
    st.markdown(f"**{views.esc(ckpt.source)}**: {len(ckpt.tensors):,} tensors in {figures.counted(ckpt.files, 'file')}, "
                f"{ckpt.total_bytes:,} B ({views.gib(ckpt.total_bytes)}), from the headers (no weights read).")
    fmt = lambda rows: [{k: f"{v:,}" if isinstance(v, int) else v for k, v in r.items()} for r in rows]
    views.html_table(fmt(ckpt.rows()), DTYPE_COLUMNS)
    views.html_table(fmt(compare_rows(ckpt, spec, weight_format)), COMPARE_COLUMNS,
                     caption=f"Compared with kvplan's weights of {spec.name} ({weight_format or 'as shipped'}). "
                             "Differences: vision towers and MTP layers are outside kvplan's spec; scales are "
                             "counted by kvplan only for a quantized format.")
    return ckpt
