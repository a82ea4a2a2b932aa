"""The encoder workload: BERT built from a config (no hub download) and masked-language-model batches.

    .venv/bin/pytest -q tests/test_finetune_encoder.py

BERT-large pre-training is one of the three workloads the comparison costgap was born from
(BERT-large at batch 32). `build_bert` makes transformers' BertForMaskedLM with random weights
from a BertConfig of the preset's shape, SDPA attention, directly on the device. `mlm_batch` is
BERT's masking recipe (Devlin et al. 2018, section 3.1): 15% of the positions are predicted; of
those, 80% are replaced by [MASK], 10% by a random token and 10% left as they are; every other
position has label -100 (ignored by the loss). Masking runs on the device inside the timed step,
as cheap as it is there; a data collator would do the same on the host.
"""

from __future__ import annotations

import torch

MLM_PROBABILITY = 0.15  # Devlin et al. 2018, 3.1: "we mask 15% of all WordPiece tokens"
MASK_SHARE, RANDOM_SHARE = 0.8, 0.1  # of the predicted positions: [MASK], random token (rest: kept)
IGNORE_INDEX = -100  # transformers' CrossEntropyLoss ignore_index


def bert_config(p):
    """BertConfig of preset `p` (hidden, layers, heads, ffn, vocab); BERT's own defaults otherwise
    (GELU, dropout 0.1, 2 token types), as google-bert/bert-large-uncased's config.json has them."""
    from transformers import BertConfig

    return BertConfig(vocab_size=p.vocab, hidden_size=p.hidden, num_hidden_layers=p.layers,
                      num_attention_heads=p.heads, intermediate_size=p.ffn,
                      max_position_embeddings=max(p.seq_len, 512), type_vocab_size=2)


def build_bert(p, device, dtype: torch.dtype):
    """(model, config): BertForMaskedLM with random init on `device`, in `dtype`, SDPA attention."""
    from transformers import BertForMaskedLM

    cfg = bert_config(p)
    with torch.device(device):
        model = BertForMaskedLM._from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    return model, cfg


def mask_token_id(tokenizer, vocab: int) -> int:
    """The tokenizer's [MASK] id when it has one, else the first id past its vocabulary (the byte
    tokenizer's ids end at 257, so [MASK] = 258); must fit the model's vocabulary."""
    inner = getattr(tokenizer, "tok", None)
    mid = getattr(inner, "mask_token_id", None)
    if mid is None:
        mid = len(tokenizer)
    if not 0 <= mid < vocab:
        raise ValueError(f"mask token id {mid} does not fit the model's vocabulary of {vocab}")
    return int(mid)


def mlm_batch(ids: torch.Tensor, *, mask_id: int, n_tokens: int, generator: torch.Generator,
              prob: float = MLM_PROBABILITY) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, labels) for one masked-LM step on token ids `ids` (any shape, on any device).

    One uniform draw per position decides everything: r < prob predicts the position; within
    that, r < prob*0.8 -> [MASK], r < prob*0.9 -> a random id in [0, n_tokens), else unchanged."""
    if not 0 < prob < 1:
        raise ValueError(f"mlm_batch: prob must be in (0, 1), got {prob}")
    r = torch.rand(ids.shape, generator=generator, device=ids.device)
    picked = r < prob
    labels = torch.where(picked, ids, torch.full_like(ids, IGNORE_INDEX))
    rand_ids = torch.randint(0, n_tokens, ids.shape, generator=generator, device=ids.device,
                             dtype=ids.dtype)
    inputs = torch.where(r < prob * MASK_SHARE, torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (r >= prob * MASK_SHARE) & (r < prob * (MASK_SHARE + RANDOM_SHARE)),
                         rand_ids, inputs)
    return inputs, labels
