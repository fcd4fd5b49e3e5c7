"""CoNLL-2003 style NER files: one token per line (`word POS chunk NER`), blank line between
sentences, `-DOCSTART-` lines between documents."""

from __future__ import annotations

from kbert.data.examples import TaskData
from kbert.data.labels import label_index
from kbert.data.textio import read_text, split_lines
from kbert.errors import DataError

# The order used by the Hugging Face `conll2003` dataset (and models fine-tuned on it).
CONLL2003_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
DOCSTART = "-DOCSTART-"


def read_conll(path, *, tags=CONLL2003_TAGS, num_columns: int | None = 4, tag_column: int = -1,
               labelled: bool = True, data: bytes | None = None) -> TaskData:
    """Reads sentences of (words, tags).

    Args:
      tags: the tag vocabulary (label ids are indices into it); None collects the file's tags
        ("O" first, then sorted by entity type, B- before I-).
      num_columns: fields every token line must have (4 for CoNLL-2003); None accepts any >= 2.
      tag_column: which field is the tag (the last one in CoNLL-2003).
      labelled: False: a file to tag, whose lines need only the word (the first field; any
        further fields, a tag included, are ignored); examples then have tags and labels None.

    Returns:
      TaskData whose examples are {"id", "words", "tags", "labels", "document", "line"} (line:
      1-based line of the sentence's first token; document: 0-based document index, counting
      -DOCSTART- lines); label_names = the tag vocabulary; meta {"documents", "tokens"}.
    """
    lines = split_lines(read_text(path, data))
    sentences, words, tag_list, first_line = [], [], [], None
    documents, tokens, tag_lines = 0, 0, []

    def flush():
        if words:
            sentences.append((first_line, max(documents - 1, 0), list(words), list(tag_list)))
            words.clear()
            tag_list.clear()

    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            flush()
            continue
        if fields[0] == DOCSTART:
            flush()
            documents += 1
            continue
        if labelled and ((num_columns is not None and len(fields) != num_columns) or len(fields) < 2):
            expected = (f"{num_columns} space-separated fields (word POS chunk NER)"
                        if num_columns else "a word and a tag")
            raise DataError(path, expected, line=number, field="token line", value=line)
        if not words:
            first_line = number
        words.append(fields[0])
        tag_list.append(fields[tag_column] if labelled else None)
        tag_lines.append(number)
        tokens += 1
    flush()
    if not sentences:
        raise DataError(path, "at least one sentence", value="no token lines")
    if not labelled:
        examples = [{"id": str(i), "words": ws, "tags": None, "labels": None, "document": doc, "line": first}
                    for i, (first, doc, ws, _) in enumerate(sentences)]
        return TaskData(examples, None, str(path), {"documents": documents, "tokens": tokens})

    if tags is None:
        found = {t for _, _, _, ts in sentences for t in ts}
        tags = ("O",) * ("O" in found) + tuple(sorted(
            found - {"O"}, key=lambda t: (t[2:], t[:2]) if t[1:2] == "-" else (t, "")))
    tags = tuple(tags)
    examples, line_iter = [], iter(tag_lines)
    for i, (first, doc, ws, ts) in enumerate(sentences):
        labels = [label_index(path, next(line_iter), "NER tag", t, tags) for t in ts]
        examples.append({"id": str(i), "words": ws, "tags": ts, "labels": labels,
                         "document": doc, "line": first})
    return TaskData(examples, tags, str(path), {"documents": documents, "tokens": tokens})


def read_word_lines(path, *, data: bytes | None = None) -> TaskData:
    """A file to tag with one sentence a line, its words separated by whitespace (every line is a
    row, a blank one a sentence without words). Examples as read_conll(labelled=False)'s."""
    lines = split_lines(read_text(path, data))
    examples = [{"id": str(number), "words": line.split(), "tags": None, "labels": None, "document": 0,
                 "line": number} for number, line in enumerate(lines, start=1)]
    return TaskData(examples, None, str(path), {"documents": 1, "tokens": sum(len(e["words"]) for e in examples)})
