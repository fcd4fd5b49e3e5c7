"""``kbert explore`` (kbert/commands/explore.py) in this process, on a random BERT-Tiny with its MLM and
NSP heads: the lines each subcommand prints (the human forms agree with the --json forms of the same
call), where its flags land, and its user errors as one line. The answers themselves are checked
against the heads' softmax in tests/explore/test_heads_model.py, the pages in tests/explore/test_attention.py,
the workshop data and score in tests/explore/test_ene_workshop.py."""

import json
import re

import pytest

from fixtures.cli import run_command


def _explore(*argv):
    result = run_command("explore", *argv)
    assert result.status == 0, result.err
    return result.out


@pytest.mark.slow
def test_fill_mask_lines_show_the_json_answers_in_the_text(tiny_heads_dir):
    from kbert.explore.masked_text import join_pieces

    texts = ["the [MASK] sat on the mat", "[MASK] went home"]
    answers = [json.loads(line) for line in
               _explore("fill-mask", tiny_heads_dir, *texts, "--json", "--top-k", "3").splitlines()]
    assert [a["position"] for a in answers] == [2, 1]  # one object per [MASK], in order ([CLS] is 0)
    assert all(len(a["ids"]) == len(a["tokens"]) == len(a["probabilities"]) == 3 for a in answers)

    lines = _explore("fill-mask", tiny_heads_dir, *texts, "--top-k", "3").splitlines()
    words = [["the", "[MASK]", "sat", "on", "the", "mat"], ["[MASK]", "went", "home"]]
    expected = []
    for text, answer, tokens in zip(texts, answers, words):
        expected += [text, f"  [MASK] 1 (position {answer['position']}):"]
        for token, p in zip(answer["tokens"], answer["probabilities"]):
            filled = [token if t == "[MASK]" else t for t in tokens]
            expected.append(f"    {p:7.4f}  {token:<12}  {join_pieces(filled, False)}")
    assert lines == expected


@pytest.mark.slow
def test_next_sentence_line_agrees_with_its_json(tiny_heads_dir):
    a, b = "the man went to the store.", "he bought a gallon of milk."
    p = json.loads(_explore("next-sentence", tiny_heads_dir, a, b, "--json"))["is_next_probability"]
    line = _explore("next-sentence", tiny_heads_dir, a, b)
    assert line == f"P(IsNext) = {p:.4f}  ({'IsNext' if p >= 0.5 else 'NotNext'})\n"


def test_attention_writes_its_page_into_a_new_folder_and_says_where(tiny_heads_dir, tmp_path):
    out = tmp_path / "pages" / "deeper" / "attention.html"
    assert _explore("attention", tiny_heads_dir, "hello there", "general kenobi", "--out", out,
                    "--layer", "1", "--head", "0") == f"attention page: {out}\n"
    page = out.read_text(encoding="utf-8")
    assert f"Attention of {tiny_heads_dir.name}: hello there | general kenobi" in page
    data = json.loads(page.split('id="attention-data">')[1].split("</script>")[0])
    assert data["layers"] == [1] and data["heads"] == [0]
    assert [p.name for p in out.parent.iterdir()] == ["attention.html"]  # written whole, no temporary left


@pytest.mark.parametrize("argv, message", [
    (["fill-mask", "{model}", "no mask here"],
     "no [MASK] in 'no mask here' (write [MASK] where a token is missing)"),
    (["fill-mask", "{model}", "a [MASK]", "--top-k", "0"], "--top-k must be at least 1, got 0 (see kbert explore --help)"),
    (["attention", "{model}", "hello", "--out", "{tmp}/a.html", "--head", "7"], r"--head 7 is out of range"),
    (["next-sentence", "{tmp}/nothing", "a", "b"], "model directory not found"),
    (["workshop-data", "{tmp}/ene", "--corpus", "{tmp}/none.txt"],
     "no corpus at {tmp}/none.txt (give --corpus: JSQuAD's jsquad_wikipedia.txt)"),
])
def test_user_errors_are_one_line(tiny_heads_dir, tmp_path, argv, message):
    argv = [a.format(model=tiny_heads_dir, tmp=tmp_path) for a in argv]
    result = run_command("explore", *argv)
    assert result.status == 1 and result.out == ""
    (line,) = result.err.splitlines()
    assert line.startswith("kbert explore: error: ") and message.format(tmp=tmp_path) in line, line
    assert not re.search(r"\.(html|jsonl)$", " ".join(p.name for p in tmp_path.rglob("*")))  # nothing written
