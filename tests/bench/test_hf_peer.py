"""The transformers (torch) peer of the benches (kbert/bench/hf_peer.py): its rows in ``kbert bench
encoder --vs hf``, where it runs as a child process, and its own ``build`` here: the configuration it
gives transformers and the candidates it hands the parent."""

from __future__ import annotations

import re

import pytest

from conftest import require
from fixtures.bench_cli import TINY, run_bench


@pytest.mark.slow
def test_hf_peer_in_a_subprocess(capsys):
    require("torch")
    require("transformers")
    code, out = run_bench(capsys, "encoder", *TINY, "--vs", "hf", "--hf-compile", "off")
    assert code == 0
    assert "matmul peak torch float32" in out
    assert re.search(r"^transformers \S+ eager", out, re.M)



@pytest.mark.slow  # importing transformers (and torch) takes seconds
@pytest.mark.parametrize("act", ["gelu", "gelu_exact"])
def test_transformers_gets_the_kbert_configuration_it_is_timed_against(act):
    """The peer's transformers config, read back by kbert's Hugging Face converter, is the kbert
    config it was made from: the same shape and the same GELU (kbert's "gelu" is the tanh form)."""
    require("transformers")
    from kbert import BertConfig
    from kbert.bench.hf_peer import _hf_config
    from kbert.convert.hf import config_from_hf

    config = BertConfig.preset("tiny", hidden_act=act)
    hf = _hf_config(config.to_dict())
    assert config_from_hf(hf.to_dict(), "the peer's config").to_dict() == config.to_dict()


@pytest.mark.slow
def test_build_hands_the_parent_its_candidates_and_the_matmul_peak():
    """What the parent reads from ``build``: the peak row first (group "peak", which --no-peak drops),
    then one row per candidate with the spec's items and FLOPs; each candidate runs the spec's shape."""
    torch = require("torch")
    require("transformers")
    from kbert import BertConfig
    from kbert.bench.hf_peer import build

    config = BertConfig.preset("tiny")
    spec = dict(task="encoder", config=config.to_dict(), batch_size=2, seq_length=8, precision="float32",
                threads=1, compile="off", warmup=1, flops=5.0)
    threads = torch.get_num_threads()
    try:
        infos, fns, versions = build(spec)
        with pytest.raises(ValueError, match="unknown task 'predict'"):
            build(dict(spec, task="predict"))
    finally:
        torch.set_num_threads(threads)  # build sets the child's thread count; this process is not one
    assert versions.startswith("transformers ") and ", torch " in versions
    assert [i["group"] for i in infos] == ["peak", "peer"] and set(fns) == {i["name"] for i in infos}
    peak, eager = infos
    assert peak["name"].startswith("matmul peak torch float32") and peak["flops"] == 2.0 * 2048**3
    assert eager["name"].endswith(" eager") and "torch.compile" not in " ".join(fns)  # compile "off"
    assert (eager["items"], eager["flops"]) == (2, 10.0)  # per item x batch
    assert fns[eager["name"]]().shape == (2, 8, config.hidden_size)
