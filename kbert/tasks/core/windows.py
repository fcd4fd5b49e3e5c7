"""Long documents: a text longer than one model input read in overlapping windows.

``long_documents`` is ``"truncate"`` (the text is cut at ``seq_length``, as BERT has always done),
``"sentences"`` (classification: the text split into sentences, kbert.text.sentences, each read
alone as the windows below read a text, kbert.tasks.classification.window_inputs) or ``"windows"``: the text's word pieces are read in windows of the room one input leaves
(``seq_length`` less [CLS] and the [SEP]s, less text A for a pair), each starting ``doc_stride``
pieces after the one before, until a window reaches the end: google-research/bert's
``run_squad.py`` doc spans, whose answer for long SQuAD contexts kbert's span QA already uses.
A text that fits in one window gets exactly one window, the same input ``truncate`` gives it.

Each token is read in one or more windows; where one answer per token is needed (tagging) it comes
from the window where the token has the most context on both sides, ``run_squad.py``'s
``_check_is_max_context``: the largest ``min(left, right) + 0.01 * window length``, the first such
window on a tie.

This module plans windows in TensorFlow over RaggedTensors of word-piece ids (``window_rows``), which
the task models run in their graph, so that an exported SavedModel cuts windows itself; the tests
hold it to a plain Python plan (tests/fixtures/windows_reference.py).
"""

from __future__ import annotations

from kbert.errors import OptionsError

LONG_DOCUMENTS = ("truncate", "windows", "sentences")
# The keys that a batch of documents' windows adds to the packed ids (document-level training of
# windows, kbert.tasks.classification.window_inputs.document_batches): each window's document in
# the batch, and a [documents] mask, 0 for the rows that pad a batch on the host.
WINDOW_DOCUMENT, DOCUMENT_MASK = "window_document", "document_mask"


def default_stride(seq_length: int) -> int:
    """The stride when none is given: half a one-text window, so that every piece away from a
    document's ends is read in two windows and has at least a quarter window of context."""
    return max(1, (int(seq_length) - 2) // 2)


def window_settings(long_documents, doc_stride, seq_length, modes=("truncate", "windows")) -> tuple:
    """``(long_documents, stride)`` of a task model: checked (ValueError, naming the flags; a mode
    outside ``modes``, those the model takes, too), the stride ``default_stride`` when none is given."""
    check_long_documents(long_documents, doc_stride, seq_length)
    if long_documents not in modes:
        raise OptionsError(f"--long-documents {long_documents}: this model takes {', '.join(modes)}",
                           option="long_documents", value=long_documents)
    return long_documents, int(doc_stride) if doc_stride is not None else default_stride(seq_length)


def check_long_documents(long_documents, doc_stride, seq_length) -> None:
    """Raises ValueError (naming the flags) for a mode not in LONG_DOCUMENTS or a stride that
    is not a positive number below ``seq_length``."""
    if long_documents not in LONG_DOCUMENTS:
        raise OptionsError(f"--long-documents must be one of {', '.join(LONG_DOCUMENTS)}, got {long_documents!r}",
                           option="long_documents", value=long_documents)
    if doc_stride is None:
        return
    if isinstance(doc_stride, bool) or not isinstance(doc_stride, int) or doc_stride < 1:
        raise OptionsError(f"--doc-stride must be a positive whole number of word pieces, got {doc_stride!r}",
                           option="doc_stride", value=doc_stride)
    if seq_length is not None and doc_stride >= int(seq_length):
        raise OptionsError(f"--doc-stride {doc_stride} must be below --seq-length {seq_length}: windows that "
                           "far apart would not overlap", option="doc_stride", value=doc_stride)


# -- in the graph ------------------------------------------------------------------------------------
def window_rows(tokens, window_tokens, stride):
    """The windows of every row of ``tokens`` (a RaggedTensor [batch, (pieces)] of ids), in row
    then window order: they start at 0, step, 2 step, ... until one reaches the end (``step`` =
    ``min(stride, window_tokens)``, so no piece is skipped), each holding ``min(window_tokens,
    pieces - start)`` pieces; an empty row has one (empty) window.

    ``window_tokens``: the room of a window, a scalar or one per row ([batch], e.g. less text A);
    ``stride``: a scalar. Returns a dict: ``pieces`` RaggedTensor [windows, (pieces)], ``document``
    int64 [windows] (the row each window comes from), ``start`` int64 [windows] (its first piece's
    index in the row), ``num_windows`` int64 [batch], ``positions`` RaggedTensor [windows, (pieces)]
    (each piece's index in ``tokens.flat_values``, to gather what goes with the pieces).
    """
    import tensorflow as tf

    tokens = tokens if isinstance(tokens, tf.RaggedTensor) else tf.RaggedTensor.from_tensor(tokens)
    num_tokens = tokens.row_lengths()
    room = tf.broadcast_to(tf.cast(window_tokens, tf.int64), tf.shape(num_tokens, out_type=tf.int64))
    step = tf.minimum(tf.cast(stride, tf.int64), room)
    # 1 window when the text fits (an empty text too); else 1 + ceil((n - room) / step).
    over = tf.maximum(num_tokens - room, 0)
    num_windows = 1 + (over + step - 1) // tf.maximum(step, 1)
    document = tf.repeat(tf.range(tokens.nrows()), num_windows)
    index = tf.ragged.range(num_windows).flat_values
    start = index * tf.gather(step, document)
    length = tf.minimum(tf.gather(room, document), tf.gather(num_tokens, document) - start)
    first = tf.gather(tokens.row_starts(), document) + start
    positions = tf.ragged.range(first, first + length)
    pieces = tf.gather(tokens.flat_values, positions)
    return {"pieces": pieces, "document": document, "start": start, "num_windows": num_windows,
            "positions": positions}


def max_context_mask(windows: dict):
    """bool RaggedTensor [windows, (pieces)] shaped as ``windows["pieces"]``: True where this window
    is the piece's best (``run_squad.py``'s max-context score, the first window on a tie). Every
    piece of a row is True in exactly one of its windows."""
    import tensorflow as tf

    pieces, document, start = windows["pieces"], windows["document"], windows["start"]
    length = pieces.row_lengths()
    # Each piece is scored against every window of its row ([pieces, most windows of a row]);
    # a row's windows are consecutive from row_first.
    row_first = tf.gather(tf.concat([[0], tf.cumsum(windows["num_windows"])[:-1]], 0), document)
    row_count = tf.gather(windows["num_windows"], document)
    position = tf.ragged.range(start, start + length)                      # piece index in its row
    flat_pos = position.flat_values                                        # [P]
    flat_window = tf.repeat(tf.range(tf.size(document, out_type=tf.int64)), length)
    k_max = tf.reduce_max(tf.concat([windows["num_windows"], [1]], 0))
    k = tf.range(k_max)[tf.newaxis]                                        # [1, K]
    other = tf.gather(row_first, flat_window)[:, tf.newaxis] + k           # [P, K] window ids
    valid = k < tf.gather(row_count, flat_window)[:, tf.newaxis]
    other = tf.where(valid, other, 0)
    o_start = tf.gather(start, other)
    o_end = o_start + tf.gather(length, other) - 1
    p = flat_pos[:, tf.newaxis]
    inside = valid & (p >= o_start) & (p <= o_end)
    score = (tf.cast(tf.minimum(p - o_start, o_end - p), tf.float64)
             + 0.01 * tf.cast(tf.gather(length, other), tf.float64))
    score = tf.where(inside, score, tf.constant(-float("inf"), tf.float64))
    best = tf.reduce_max(score, axis=1, keepdims=True)
    best_k = tf.reduce_min(tf.where(inside & (score == best), k, k_max), axis=1)
    mine = tf.equal(tf.gather(row_first, flat_window) + best_k, flat_window)
    return pieces.with_flat_values(mine)


def model_settings(task_type, task_meta: dict, long_documents=None, doc_stride=None) -> dict:
    """The load_task_model settings for ``long_documents`` / ``doc_stride`` given to kbert predict or
    the task export instead of what the model directory recorded (None: keep it). ValueError for
    windows on a task type that cannot combine them, a stride not below the model's seq_length, or a
    stride for a model that reads no windows (an OptionsError naming doc_stride)."""
    import inspect

    from kbert.errors import OptionsError

    seq_length = task_meta.get("seq_length")
    check_long_documents(long_documents or "truncate", doc_stride, seq_length)
    if long_documents is not None and long_documents not in task_type.long_documents:
        raise OptionsError(f"--long-documents {long_documents}: a {task_meta.get('type')} model (task type "
                           f"{task_type.name!r}) cannot combine windows into one answer; it takes "
                           f"{', '.join(task_type.long_documents)}", option="long_documents", value=long_documents)
    mode = long_documents or task_meta.get("long_documents") or "truncate"
    recorded = task_meta.get("long_documents") or "truncate"
    if task_meta.get("window_pooling") == "attention" and mode != recorded:
        raise OptionsError(f"--long-documents {mode}: this model learned its attention over {recorded} (window "
                           f"pooling attention); it reads {recorded} only", option="long_documents", value=mode)
    if doc_stride is not None and not task_type.reads_windows(mode):
        raise OptionsError(f"--doc-stride {doc_stride}: this {task_meta.get('type')} model reads no windows under "
                           f"--long-documents {mode}" + (" (add --long-documents windows)"
                                                         if "windows" in task_type.long_documents else ""),
                           option="doc_stride", value=doc_stride)
    # the constructor arguments of the model class and the classes it passes **kwargs on to
    accepted = {name for klass in task_type.model_class(task_meta["type"]).__mro__ if "__init__" in vars(klass)
                for name in inspect.signature(klass.__init__).parameters}
    given = {"long_documents": long_documents, "doc_stride": doc_stride}
    return {k: v for k, v in given.items() if v is not None and k in accepted}
