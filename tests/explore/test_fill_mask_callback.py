"""Pre-training shows its guesses (kbert/explore/fill_mask_callback.py): the fill-mask text summaries
a short run of the main job (python -m kbert.pretrain) writes every interval, read back."""

from conftest import PRETRAIN_RUN_EVERY, PRETRAIN_RUN_STEPS
from kbert.explore.fill_mask_callback import read_fill_mask_summaries


def test_pretraining_writes_fill_mask_summaries(pretrain_run):
    model_dir = pretrain_run.model_dir  # conftest: fill-mask every PRETRAIN_RUN_EVERY steps
    summaries = read_fill_mask_summaries(model_dir / "logs" / "fill_mask")
    assert sorted(summaries) == [PRETRAIN_RUN_EVERY, PRETRAIN_RUN_STEPS]
    last = summaries[PRETRAIN_RUN_STEPS]
    assert last.count("[MASK]") == 4 and last.count("hidden word") == 4
    assert "| guess | probability |" in last
