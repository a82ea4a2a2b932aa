"""The short fine-tune: presets, model building (decoder, encoder, QLoRA), the training step and
steady-state rule, FLOPs and MFU, the plan, the record and the sample data; run.py is its entry."""
