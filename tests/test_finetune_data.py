"""Alpaca JSONL loading, byte tokenizer, packing, DataLoader; bad --data names file and line."""

import json

import pytest
import torch

from tasks.probe.finetune import data as fdata
from tasks.probe.finetune.run import run_finetunes


def _write(tmp_path, lines):
    p = tmp_path / "d.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_shipped_sample_is_the_deterministic_generator_output(tmp_path):
    regenerated = fdata.write_sample(tmp_path / "s.jsonl")
    assert regenerated.read_bytes() == fdata.SAMPLE_PATH.read_bytes()
    recs = fdata.read_alpaca(fdata.SAMPLE_PATH)
    assert len(recs) == 400 and all(set(r) == {"instruction", "input", "output"} for r in recs)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(fdata.DataError, match="not found"):
        fdata.read_alpaca(tmp_path / "nope.jsonl")


def test_malformed_line_names_its_line_number(tmp_path):
    good = json.dumps({"instruction": "a", "output": "b"})
    p = _write(tmp_path, [good, "", good, '{"instruction": "x", "output": '])
    with pytest.raises(fdata.DataError, match=r"d\.jsonl:4: malformed JSON"):
        fdata.read_alpaca(p)


@pytest.mark.parametrize("line,match", [
    ('["a list"]', r":2: expected a JSON object"),
    ('{"instruction": "i"}', r":2: field 'output' must be a string"),
    ('{"instruction": 3, "output": "o"}', r":2: field 'instruction' must be a string"),
    ('{"instruction": "i", "input": 5, "output": "o"}', r":2: field 'input' must be a string"),
])
def test_bad_fields_name_line_and_field(tmp_path, line, match):
    p = _write(tmp_path, [json.dumps({"instruction": "a", "output": "b"}), line])
    with pytest.raises(fdata.DataError, match=match):
        fdata.read_alpaca(p)


def test_empty_and_non_utf8_files(tmp_path):
    (tmp_path / "e.jsonl").write_text("\n\n")
    with pytest.raises(fdata.DataError, match="no records"):
        fdata.read_alpaca(tmp_path / "e.jsonl")
    (tmp_path / "b.jsonl").write_bytes(b'{"instruction": "\xff", "output": "o"}\n')
    with pytest.raises(fdata.DataError, match="not UTF-8"):
        fdata.read_alpaca(tmp_path / "b.jsonl")


def test_bad_data_through_run_finetunes_fails_before_any_run(tmp_path):
    p = _write(tmp_path, ["not json"])
    with pytest.raises(fdata.DataError, match=r":1: malformed JSON"):
        run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=5, options={"data": str(p)})
    with pytest.raises(fdata.DataError, match="not found"):
        run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=5, options={"data": str(tmp_path / "x")})


def test_byte_tokenizer_render_and_pack():
    tok = fdata.ByteTokenizer()
    assert tok.encode("hé") == [104, 195, 169] and len(tok) == 258
    recs = [{"instruction": "Say hi.", "input": "", "output": "hi"},
            {"instruction": "Add.", "input": "1 + 2", "output": "3"}]
    assert "### Input:\n1 + 2" in fdata.render(recs[1]) and "### Input" not in fdata.render(recs[0])
    blocks = fdata.pack(recs, tok, seq_len=64, min_blocks=8)
    assert blocks.shape == (blocks.shape[0], 64) and blocks.shape[0] >= 8
    assert blocks[0, 0].item() == tok.bos_token_id and int(blocks.max()) < len(tok)


def test_loader_streams_any_number_of_batches():
    blocks = torch.arange(5 * 16).view(5, 16)
    loader = fdata.make_loader(blocks, 4, num_samples=40, pin_memory=False, num_workers=0)
    batches = list(loader)
    assert len(batches) == 10 and all(b.shape == (4, 16) for b in batches)
