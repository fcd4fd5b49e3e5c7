"""Task type "tagging": a tag for each word (NER, kbert.tasks.tagging.model.TokenTagger), on its first
WordPiece. Exports of mecab-* models take MeCab words and answer per word, entities as word
spans (kbert.tasks.span_qa.words_answers).

Task: conll2003 (alias conll; kbert.data.conll: train.txt, valid.txt, test.txt), evaluated with
seqeval's entity precision/recall/F1; predictions in conlleval's input format.
"""

from __future__ import annotations

from kbert.data import conll
from kbert.errors import OptionsError
from kbert.tasks.tagging import submission
from kbert.tasks.tagging.metrics import ner_metrics
from kbert.tasks.core.registry import register_task, register_task_type
from kbert.tasks.core.task_type import WARMUP_TEXTS, DataSource, Recipe, TaskType

CONLL_FILES = {"train": "train.txt", "dev": "valid.txt", "valid": "valid.txt", "test": "test.txt"}


class TaggingRecipe(Recipe):
    # Plain names in eval_results.json (seqeval's entity-level micro precision, recall, F1).
    metric_names = ("precision", "recall", "f1")
    main_metric = "f1"

    def read(self):
        o = self.options
        train = conll.read_conll(self.data_file(CONLL_FILES, "train", o.train_file))
        dev = conll.read_conll(self.data_file(CONLL_FILES, self.eval_split, o.eval_file), tags=train.label_names)
        self.label_names = train.label_names
        self.subsets(train.examples, dev.examples)

    def build_model(self, init_dir, encoder_overrides=None):
        from kbert.tasks.tagging.model import TokenTagger

        return TokenTagger.from_model_dir(init_dir, label_names=self.label_names,
                                          long_documents=self.options.long_documents,
                                          doc_stride=self.doc_stride, **self.build_kwargs(encoder_overrides))

    def train_dataset(self, model):
        return model.dataset([e["words"] for e in self.train], [e["labels"] for e in self.train],
                             batch_size=self.options.batch_size, shuffle=True, seed=self.options.seed,
                             boundaries=self.boundaries(model.seq_length))

    def evaluate(self, model):
        predicted = model.predict_words([e["words"] for e in self.dev], batch_size=self.options.eval_batch_size)
        return ner_metrics(predicted, [e["tags"] for e in self.dev]), predicted

    def write_predictions(self, out_dir, predicted):
        return [submission.write_conll(self.out_path(out_dir, "predictions.txt"), [e["words"] for e in self.dev],
                                       [e["tags"] for e in self.dev], predicted)]


@register_task_type
class Tagging(TaskType):
    name = "tagging"
    model_types = ("token_tagger",)
    recipe_class = TaggingRecipe
    long_documents = ("truncate", "windows")
    sequence_options = ("bilstm", "features")
    signature_docs = {
        "token_tagger": "text -> words, word_start, word_end, tags, tag_ids [b, W]; num_words [b]; "
                        "entity_type, entity_text, entity_start, entity_end [b, E]; num_entities [b]. "
                        "mecab-* models (words in): words [b, W] -> tags, tag_ids [b, W] (\"\", -1 at padding); "
                        "num_words [b]; entity_type, "
                        "entity_text (its words joined with \"\": Japanese writes no spaces), entity_start_word, "
                        "entity_end_word (inclusive word indices) [b, E]; num_entities [b]",
    }

    def model_class(self, model_type):
        from kbert.tasks.tagging.model import TokenTagger

        return TokenTagger

    def data_source(self, task, split, options):
        return DataSource("conll", self.split_file(task, CONLL_FILES, split), _read_conll,
                          ("ner_precision", "ner_recall", "ner_f1"))  # compute_metrics' names

    def signatures(self, module):
        import tensorflow as tf

        from kbert.tasks.tagging.iob_graph import iob_entities, iob_word_entities
        from kbert.tasks.core.signatures import IDS_SPEC, valid_utf8
        from kbert.tasks.core.words_inputs import check_words, join_words, takes_words, to_columns, word_layout

        model = module.model
        names = tf.constant(model.label_names)

        def word_tag_ids(pieces):
            """Tag ids [batch, max words] of pieces [batch, (words), (pieces)] (fill_label past a
            row's words and for words truncation cut off): a word's first piece carries its tag."""
            if model.windows:  # rows are windows; each word is named in its max-context window only
                packed, _, word_ids, document = model.window_features(pieces)
            else:
                (packed, _, word_ids), document = model.features(pieces), None
            token_tags = tf.argmax(model(packed, training=False), axis=-1, output_type=tf.int32)
            num_words = tf.cast(pieces.row_lengths(), tf.int32)
            batch, width = tf.shape(num_words)[0], tf.reduce_max(tf.concat([num_words, [0]], 0))
            tag_ids = tf.fill([batch, width], tf.constant(model.fill_label, tf.int32))
            first = word_ids >= 0
            rows = tf.where(first)[:, 0]
            index = tf.stack([tf.cast(rows if document is None else tf.gather(document, rows), tf.int32),
                              tf.cast(tf.boolean_mask(word_ids, first), tf.int32)], 1)
            return tf.tensor_scatter_nd_update(tag_ids, index, tf.boolean_mask(token_tags, first)), num_words

        @tf.function(input_signature=[{"text": tf.TensorSpec([None], tf.string, name="text")}])
        def serve(inputs):
            text = valid_utf8(inputs["text"])
            _, starts, ends = model.tokenizer.tokenize_with_offsets(text, unit="UTF8_CHAR")
            word_start = tf.cast(tf.reduce_min(starts, axis=2), tf.int32)  # [batch, (words)]
            word_end = tf.cast(tf.reduce_max(ends, axis=2), tf.int32)
            tag_ids, num_words = word_tag_ids(model.pieces(texts=text))
            width = tf.shape(tag_ids)[1]
            word_start_d = word_start.to_tensor(default_value=-1, shape=[None, None])[:, :width]
            word_end_d = word_end.to_tensor(default_value=-1, shape=[None, None])[:, :width]
            valid = tf.sequence_mask(num_words, width)
            tags = tf.where(valid, tf.gather(names, tag_ids), "")
            tag_ids = tf.where(valid, tag_ids, -1)
            words = tf.strings.substr(tf.repeat(text[:, None], width, axis=1), tf.maximum(word_start_d, 0),
                                      tf.maximum(word_end_d - word_start_d, 0), unit="UTF8_CHAR")
            out = {"words": tf.where(valid, words, ""), "word_start": word_start_d, "word_end": word_end_d,
                   "tags": tags, "tag_ids": tag_ids, "num_words": num_words}
            out.update(iob_entities(tags, word_start_d, word_end_d, num_words, text))
            return out

        @tf.function(input_signature=[{"words": tf.TensorSpec([None, None], tf.string, name="words")}])
        def serve_words(inputs):  # mecab-*: MeCab words in, tags per word and entities as word spans
            words = check_words(valid_utf8(inputs["words"]), "words")
            layout = word_layout(words)
            tag_ids, num_words = word_tag_ids(model.tokenizer(join_words(words), pre_tokenized=True))
            tag_ids = to_columns(layout, tag_ids, -1)
            tags = tf.where(layout["nonempty"], tf.gather(names, tf.maximum(tag_ids, 0)), "")
            out = {"tags": tags, "tag_ids": tag_ids, "num_words": num_words}
            out.update(iob_word_entities(tags, words))
            return out

        @tf.function(input_signature=[IDS_SPEC])
        def serve_ids(inputs):
            logits = model(dict(inputs), training=False)
            tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
            return {"token_tag_ids": tag_ids, "token_tags": tf.gather(names, tag_ids),
                    "token_probabilities": tf.nn.softmax(logits)}

        return (serve_words if takes_words(model.tokenizer) else serve), serve_ids

    def warmup_inputs(self, model):
        # raw text; kbert.export.task turns it into words for a words-in tokenizer
        requests = [{"text": WARMUP_TEXTS[:1]}, {"text": (WARMUP_TEXTS * 4)[:8]}]
        if getattr(model, "windows", False):  # a document of several windows
            requests.append({"text": [" ".join(WARMUP_TEXTS * (model.seq_length // 4 + 1)), WARMUP_TEXTS[1]]})
        return requests

    # -- kbert.predict: a CoNLL file (words in the first column) or one sentence a line ----------
    input_formats = ("conll", "lines")

    def read_prediction_input(self, task_meta, path, options):
        if options.probabilities:
            raise OptionsError("--probabilities: a token tagger answers with tags, not probabilities",
                               option="probabilities")
        fmt = options.task_format or "conll"
        if fmt not in self.input_formats:
            raise OptionsError(f"--task-format {fmt!r}: a token tagger reads one of {', '.join(self.input_formats)}",
                               option="task_format")
        return conll.read_conll(path, labelled=False) if fmt == "conll" else conll.read_word_lines(path)

    def predict(self, model, data, options, progress=None):
        """{"id", "tags": [one per word], "entities": [{"type", "start", "end", "text"}]}: entity
        spans in word indices, end exclusive (words[start:end]), text = those words joined by spaces."""
        from kbert.tasks.tagging.ner_alignment import entity_spans
        from kbert.tasks.core.prediction import RowProgress

        examples = data.examples
        tagged = [i for i, e in enumerate(examples) if e["words"]]  # a line without words gets no tags
        progress = (progress or RowProgress(show=False)).start(len(tagged))
        tags = [[] for _ in examples]
        if tagged:
            predicted = model.predict_words([examples[i]["words"] for i in tagged], batch_size=options.batch_size,
                                            progress=progress)
            for i, t in zip(tagged, predicted):
                tags[i] = t
        iob = all(n == "O" or n[:2] in ("B-", "I-") for n in model.label_names)
        rows = []
        for e, t in zip(examples, tags):
            words = e["words"]
            entities = [{"type": kind, "start": s, "end": last + 1, "text": " ".join(words[s:last + 1])}
                        for kind, s, last in (entity_spans(t) if iob else [])]
            rows.append({"id": e["id"], "tags": t, "entities": entities})
        return rows

    def format_predictions(self, task_meta, data, predictions, fmt):
        if fmt == "tsv":  # one cell of entities: TYPE:start-end (word indices, end exclusive)
            predictions = [{**p, "entities": [f"{x['type']}:{x['start']}-{x['end']}" for x in p["entities"]]}
                           for p in predictions]
        return super().format_predictions(task_meta, data, predictions, fmt)


def _read_conll(path, data=None):  # module-level: picklable for Beam workers
    return conll.read_conll(path, data=data)


register_task("conll2003", "tagging", aliases=("conll",), help="CoNLL-2003 NER (--data-dir: train.txt, valid.txt)")
