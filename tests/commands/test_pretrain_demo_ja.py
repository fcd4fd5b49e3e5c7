"""python -m kbert.pretrain --demo ja: the Japanese main job end to end (few steps), and its exports."""

import json

import pytest

from conftest import require, run_fresh_python
require("sentencepiece")
from kbert.commands import pretrain_demo_ja as demo


# demo_ja_run (conftest): README's ``python -m kbert.pretrain --demo ja`` with the README test's few
# steps, run once for this module and tests/docs/test_readme_commands.py. What is checked here (files,
# summary fields, exports, the held-out split) does not depend on the step count.


@pytest.mark.slow
def test_demo_writes_everything_and_reports(demo_ja_run):
    cwd, out, steps = demo_ja_run
    model_dir = cwd / "runs" / "pretrain_demo_ja" / "sentencepiece" / "model"
    summary = json.loads((model_dir / "demo_ja_summary.json").read_text())
    assert summary["steps"] == steps and summary["vocab_size"] == 8000
    assert 0 <= summary["held_out_unk_rate"] < 0.02 and summary["held_out_pieces"] > 5000
    assert 0 < summary["held_out_mlm_accuracy"] <= 1
    metadata = json.loads((model_dir / "kbert.json").read_text())
    assert metadata["tokenizer"] == {"type": "sentencepiece", "lower_case": False, "vocab_file": "spm.model"}
    assert (model_dir / "spm.model").read_bytes() == (model_dir.parent / "data" / "spm.model").read_bytes()
    for line in ("encoder SavedModel:", "preprocessor SavedModel:", "vocabulary:", "model directory:"):
        assert line in out
    # The held-out text is disjoint from the training text, and both are markup-free NFKC text.
    text = model_dir.parent / "data" / "text"
    train = (text / "train" / "jsquad_wikipedia.txt").read_text(encoding="utf-8")
    held_out = (text / "eval" / "jsquad_wikipedia.txt").read_text(encoding="utf-8")
    assert not {p for p in held_out.split("\n") if len(p) > 40} & {p for p in train.split("\n") if len(p) > 40}
    assert "《" not in (text / "train" / "wagahaiwa_nekodearu.txt").read_text(encoding="utf-8")


@pytest.mark.slow
def test_exported_preprocessor_takes_raw_japanese_in_a_fresh_process(demo_ja_run):
    import sentencepiece as spm

    cwd, _, _ = demo_ja_run
    pre = cwd / "saved_models" / "kbert_demo_ja_sentencepiece_preprocessor" / "1"
    enc = cwd / "saved_models" / "kbert_demo_ja_sentencepiece_encoder" / "1"
    texts = ["吾輩は猫である。名前はまだ無い。", "梅雨は東アジアの気象現象である。"]
    printed = run_fresh_python(f"""
import json, tensorflow as tf, tensorflow_text
pre = tf.saved_model.load({str(pre)!r})
enc = tf.saved_model.load({str(enc)!r})
inputs = pre(tf.constant({texts!r}))
out = enc(inputs)
print(json.dumps({{"ids": inputs["input_word_ids"].numpy().tolist(), "mask": inputs["input_mask"].numpy().tolist(),
                  "pooled": list(out["pooled_output"].shape)}}))
""")
    got = json.loads(printed.strip().splitlines()[-1])
    processor = spm.SentencePieceProcessor(model_file=str(cwd / "runs" / "pretrain_demo_ja" / "sentencepiece"
                                                          / "model" / "spm.model"))
    for row, mask, text in zip(got["ids"], got["mask"], texts):
        n = sum(mask)
        assert row[:n] == [2, *processor.encode(text), 3]  # [CLS] pieces [SEP]
        assert set(row[n:]) <= {0}
    assert got["pooled"] == [2, 128]


def test_every_tokenizer_type_is_a_choice(capsys):
    for kind in ("sentencepiece", "wordpiece", "mecab-wordpiece", "mecab-character"):
        assert demo.parse_args(["--demo", "ja", "--tokenizer", kind]).tokenizer == kind
    with pytest.raises(SystemExit):
        demo.parse_args(["--demo", "ja", "--tokenizer", "sudachi"])
    assert "invalid choice: 'sudachi'" in capsys.readouterr().err


def test_held_out_split_is_the_last_tenth():
    novel = "\n".join(f"段落{i}。" for i in range(50))
    train, held_out = demo.split_held_out(novel, is_novel=True)
    assert held_out.split() == [f"段落{i}。" for i in range(45, 50)] and "段落44。" in train
    wiki = "\n\n".join(f"記事{i}\n本文{i}。" for i in range(20))
    train, held_out = demo.split_held_out(wiki, is_novel=False)
    assert held_out.strip() == "記事18\n本文18。\n\n記事19\n本文19。"
