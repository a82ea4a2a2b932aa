"""What each fine-tune preset is, in a buyer's words, for the overview's glossary.

    python -c "from reports.glossary import PRESETS; print(PRESETS['1b'])"

The shapes are the probe's presets (tasks/probe/finetune/presets.py: model card, mode, sequence length); tests/test_report.py holds
them equal, so the report never imports torch to describe a preset.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PresetNote:
    model: str  # the model whose shape the preset copies (random init: the weights do not matter)
    mode: str  # full | lora | qlora, as the probe's Preset.mode
    seq_len: int  # tokens per sequence
    training: str  # what is trained, in words


PRESETS: dict[str, PresetNote] = {
    "tiny": PresetNote("Llama-shaped, a few million parameters (a smoke test: CPU and CI)", "full", 256,
                       "full fine-tune, every weight trained"),
    "1b": PresetNote("TinyLlama-1.1B shape, 1.1B parameters", "full", 2048, "full fine-tune, every weight trained"),
    "7b-full": PresetNote("Llama-2-7B shape, 6.7B parameters", "full", 2048, "full fine-tune, every weight trained"),
    "8b-lora": PresetNote("Llama-3-8B shape, 8.0B parameters", "lora", 2048,
                          "LoRA r=16 on every projection; base weights frozen in bf16"),
    "8b-qlora": PresetNote("Llama-3-8B shape, 8.0B parameters", "qlora", 2048,
                           "QLoRA: base weights frozen in 4-bit NF4, LoRA r=16 on top"),
    "bert-large": PresetNote("BERT-large shape, 335M parameters (encoder, masked LM)", "full", 512,
                             "full fine-tune, every weight trained"),
}

TOKEN = ("A token is one position of a training sequence: every step trains micro-batch × sequence length "
         "tokens, on all of the instance's GPUs together. Cost per 1M tokens is what the instance-hours cost to "
         "train a million of them, reruns of failed attempts included; it compares targets only within one "
         "preset.")


def describe(preset: str) -> PresetNote | None:
    return PRESETS.get(preset)
