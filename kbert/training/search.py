"""The paper's fine-tuning protocol: ``finetune_search(FinetuneOptions, SearchOptions) -> results``.

Devlin et al. (2018, §4.1 and appendix A.3) fine-tune each task over a small grid (learning rate
5e-5, 4e-5, 3e-5, 2e-5; batch size 16, 32; epochs 2, 3, 4) and, on small data, over several random
restarts (the same pre-trained model, other shuffling and head initialisation), keeping the run
that does best on dev. Each combination x restart here is one ``kbert.finetune`` run in its own
directory under ``model_dir/runs/``. A run whose ``eval_results.json`` exists is finished (that
file is written last, whole or not at all) and is not trained again, so a killed search resumes
where it stopped. The best run's model directory is copied to ``model_dir``, whose
``eval_results.json`` lists every run (``runs``), the kept one's metrics (``best``), its index
(``selected``) and the spread of the main metric over the runs.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import pathlib
import shutil
import statistics

from kbert.api_export import kbert_export
from kbert.errors import OptionsError
from kbert.options import option
from kbert.tasks.core.options import FinetuneOptions

RUNS = "runs"


@kbert_export("kbert.SearchOptions")
@dataclasses.dataclass(frozen=True)
class SearchOptions:
    """The grid and restarts of a fine-tuning search (the paper's protocol).

    An empty grid axis takes the run's own value (``FinetuneOptions.learning_rate``,
    ``batch_size``, ``epochs``); restart ``r`` trains with seed ``FinetuneOptions.seed + r``.

    Attributes:
        learning_rates: peak learning rates to try (the paper: 5e-5, 4e-5, 3e-5, 2e-5).
        batch_sizes: training batch sizes to try (the paper: 16, 32).
        epochs: numbers of epochs to try (the paper: 2, 3, 4).
        restarts: runs of each combination, each with its own seed.

    Examples:
        >>> import kbert
        >>> search = kbert.SearchOptions(learning_rates=(5e-5, 3e-5), restarts=2)
        >>> len(search.settings(kbert.FinetuneOptions(task="csv", init="runs/tiny", model_dir="runs/out")))
        4
    """

    # The axes are no flags of their own: ``kbert finetune`` fills them from several values of
    # FinetuneOptions' --learning-rate, --batch-size and --epochs (one home per option).
    learning_rates: tuple = dataclasses.field(default=(), metadata={"cli": False})
    batch_sizes: tuple = dataclasses.field(default=(), metadata={"cli": False})
    epochs: tuple = dataclasses.field(default=(), metadata={"cli": False})
    restarts: int = option(1, help="runs of each combination, with seeds --seed, --seed + 1, ...")

    def __post_init__(self):
        for name, kind in (("learning_rates", float), ("batch_sizes", int), ("epochs", int)):
            values = tuple(getattr(self, name))
            if any(isinstance(v, bool) or not isinstance(v, (int, float) if kind is float else int) or v <= 0
                   for v in values) or len(set(values)) != len(values):
                raise OptionsError(f"{name} must hold distinct positive {kind.__name__}s, got {values!r}",
                                   option=name, value=values)
            object.__setattr__(self, name, values)
        if isinstance(self.restarts, bool) or not isinstance(self.restarts, int) or self.restarts < 1:
            raise OptionsError(f"restarts must be a positive whole number, got {self.restarts!r}",
                               option="restarts", value=self.restarts)

    def settings(self, options: FinetuneOptions) -> list[dict]:
        """Every run's ``learning_rate``, ``batch_size``, ``epochs`` and ``seed``, in order."""
        grid = itertools.product(self.learning_rates or (options.learning_rate,),
                                 self.batch_sizes or (options.batch_size,), self.epochs or (options.epochs,),
                                 range(self.restarts))
        return [{"learning_rate": lr, "batch_size": bs, "epochs": ep, "seed": options.seed + r}
                for lr, bs, ep, r in grid]


@kbert_export("kbert.finetune_search")
def finetune_search(options: FinetuneOptions, search: SearchOptions, *, progress_bar: bool = True,
                    log=print) -> dict:
    """Fine-tunes once per setting of ``search`` and keeps the run best on dev (the module docstring).

    Args:
        options: the runs' ``kbert.FinetuneOptions``; ``model_dir`` receives the best run.
        search: a ``kbert.SearchOptions``.
        progress_bar: as ``kbert.finetune``.
        log: where the runs' lines go (``print``).

    Returns:
        The results also written to ``model_dir/eval_results.json``: the kept run's (as
        ``kbert.finetune`` returns them) with ``runs``, ``best``, ``selected`` and ``spread``.

    Examples:
        >>> import contextlib, io, pathlib
        >>> import kbert
        >>> model_dir = kbert.random_model_dir("runs/tiny")
        >>> _ = pathlib.Path("runs/reviews.csv").write_text(
        ...     "text,label\\n" + "a good movie,positive\\na bad movie,negative\\n" * 4)
        >>> options = kbert.FinetuneOptions(
        ...     task="csv", init=str(model_dir), model_dir="runs/reviews-search", train_file="runs/reviews.csv",
        ...     eval_file="runs/reviews.csv", epochs=1, batch_size=4, seq_length=16,
        ...     task_options=kbert.TableOptions(text_columns=("text",)))
        >>> with contextlib.redirect_stdout(io.StringIO()):   # the runs' progress lines
        ...     results = kbert.finetune_search(options, kbert.SearchOptions(learning_rates=(5e-5, 1e-4)),
        ...                                     progress_bar=False)
        >>> [run["learning_rate"] for run in results["runs"]], results["selected"] in (0, 1)
        ([5e-05, 0.0001], True)
    """
    import keras

    from kbert.model_metadata import atomic_write
    from kbert.training.finetune import finetune

    for axis, field in (("learning_rates", "learning_rate"), ("batch_sizes", "batch_size"), ("epochs", "epochs")):
        if getattr(search, axis) and getattr(options, field) != FinetuneOptions.__dataclass_fields__[field].default:
            raise OptionsError(f"{field} is given twice: {getattr(options, field)!r} in the run's options and "
                               f"{getattr(search, axis)!r} in the search's {axis}; give it in one place",
                               option=field, value=getattr(options, field))
    out_dir = pathlib.Path(options.model_dir)
    settings = search.settings(options)
    runs, main = [], None
    for index, setting in enumerate(settings):
        run_dir = out_dir / RUNS / run_name(index, setting)
        done = run_dir / "eval_results.json"
        if done.is_file():
            results = json.loads(done.read_text(encoding="utf-8"))
            log(f"run {index + 1}/{len(settings)} ({describe(setting)}): finished before, not trained again",
                flush=True)
        else:
            log(f"run {index + 1}/{len(settings)} ({describe(setting)})", flush=True)
            keras.backend.clear_session()  # nothing of the previous run's models kept in memory
            results = finetune(dataclasses.replace(options, model_dir=str(run_dir), **setting),
                               progress_bar=progress_bar, log=log)
        main = results["main_metric"]
        runs.append({**setting, **results["best"], "model_dir": str(run_dir)})
    selected = max(range(len(runs)), key=lambda i: runs[i][main])  # the first of equals
    kept = pathlib.Path(runs[selected]["model_dir"])
    copy_run(kept, out_dir)
    values = [run[main] for run in runs]
    results = json.loads((kept / "eval_results.json").read_text(encoding="utf-8"))
    results.update(model_dir=str(out_dir), runs=runs, selected=selected,
                   best={k: v for k, v in runs[selected].items() if k != "model_dir"},
                   spread={"metric": main, "min": min(values), "max": max(values), "mean": statistics.fmean(values),
                           "stdev": statistics.stdev(values) if len(values) > 1 else 0.0})
    text = json.dumps(results, indent=2) + "\n"
    atomic_write(out_dir / "eval_results.json", lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return results


def run_name(index: int, setting: dict) -> str:
    return (f"{index:03d}-lr{setting['learning_rate']:g}-bs{setting['batch_size']}-ep{setting['epochs']}"
            f"-seed{setting['seed']}")


def describe(setting: dict) -> str:
    return (f"learning rate {setting['learning_rate']:g}, batch {setting['batch_size']}, "
            f"epochs {setting['epochs']}, seed {setting['seed']}")


def copy_run(run_dir: pathlib.Path, out_dir: pathlib.Path) -> None:
    """The kept run's files into ``out_dir`` (its model directory, predictions, logs), replacing
    those of an earlier search; ``runs/`` and the search's own results stay."""
    for entry in run_dir.iterdir():
        if entry.name in (RUNS, "eval_results.json"):
            continue
        target = out_dir / entry.name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        if entry.is_dir():
            shutil.copytree(entry, target)
        else:
            shutil.copy2(entry, target)
